"""One training run as the profile sees it: its log, ``profile.json`` and
traces, read from a trainer (:func:`from_trainer`) or a folder
(:func:`from_folder`).
"""

import collections
import glob
import json
import os
import re
import reprlib

from chainer.training import triggers

from chainer_hookext import _chainer
from chainer_hookext import _files
from chainer_hookext.report import keys
from chainer_hookext.timing import records

#: The file, in the trainer's ``out``, of the figures not in the log.
PROFILE_FILE = 'profile.json'
#: ``LogReport``'s default file name.
LOG_FILE = 'log'
#: The folder, in the trainer's ``out``, of the Timeline files.
TRACE_FOLDER = 'timeline'
#: A Timeline file's name: outlier or window, its (first) iteration.
_TRACE = re.compile(r'(outlier_)?iteration_(\d+)(?:_rank\d+)?\.json(?:\.gz)?$')

#: A run: ``out`` its folder, ``log`` LogReport's entries (list of dict),
#: ``profile`` what ``profile.json`` holds (dict), ``traces`` the paths of
#: its Timeline files, windows first, in order.
Run = collections.namedtuple('Run', ('out', 'log', 'profile', 'traces'))

#: Where a reported key of ours starts, by family.
FAMILIES = (keys.TIME + '/', keys.FLOPS + '/', keys.MEMORY + '/')


class RunError(ValueError):
    """A result folder that cannot be read as a run: the message says what
    is missing and what to do."""


def from_trainer(trainer, log=None):
    """Returns the :class:`Run` of a trainer, as it is now.

    Args:
        trainer (~chainer.training.Trainer): The trainer.
        log (list): LogReport's entries; by default those of the trainer's
            ``LogReport``, else its file in ``trainer.out`` (or none).
    """
    if log is None:
        log = _log_of(trainer)
    return Run(trainer.out, list(log), collect(trainer),
               traces_in(trainer.out))


def collect(trainer):
    """Returns what ``profile.json`` holds for ``trainer``: its
    configuration, and the figures of its extensions of this package that
    the log does not hold."""
    from chainer_hookext.extensions import link_memory
    from chainer_hookext.extensions import timed_links
    from chainer_hookext.extensions import timed_loop
    from chainer_hookext.extensions import timeline
    from chainer_hookext import plots

    updater = trainer.updater
    optimizer = updater.get_optimizer('main') if (
        'main' in updater.get_all_optimizers()) else None
    try:
        iterator = updater.get_iterator('main')
    except (AttributeError, KeyError):  # an updater of another shape
        iterator = None
    found = {}
    for name, entry in _chainer.extension_entries(trainer).items():
        found.setdefault(type(entry.extension), (name, entry.extension))
    profile = {
        'config': {
            'model': None if optimizer is None else
            type(optimizer.target).__name__,
            'optimizer': None if optimizer is None else
            type(optimizer).__name__,
            'batch_size': getattr(iterator, 'batch_size', None),
            'iteration': updater.iteration,
            'epoch': updater.epoch,
            'extensions': sorted(
                name for name, extension in found.values()
                if type(extension).__module__.startswith('chainer_hookext')),
            'trainer_extensions': list(_chainer.extension_entries(trainer)),
            # For the findings: the main iterator's class, and each
            # extension's interval trigger ``[period, unit]`` (or None).
            'iterator': None if iterator is None else
            type(iterator).__name__,
            'triggers': {
                name: [entry.trigger.period, entry.trigger.unit]
                if isinstance(entry.trigger, triggers.IntervalTrigger)
                else None
                for name, entry in _chainer.extension_entries(
                    trainer).items()},
        },
    }
    if timed_links.TimedLinks in found:
        timed = found[timed_links.TimedLinks][1]
        profile['links'] = plots.link_times(timed)
        profile['links']['names'] = [
            n for n in timed.summary(by='name') if n != keys.OUTSIDE]
    if link_memory.LinkMemory in found:
        profile['memory'] = found[link_memory.LinkMemory][1].summary()
        peak = found[link_memory.LinkMemory][1].peak_summary()
        if peak is not None:
            profile['memory_peak'] = peak
    if timed_loop.TimedLoop in found:
        profile['loop'] = True
    if timeline.Timeline in found:
        profile['timeline'] = True
    profile.update(statistics_of(trainer, found))
    return profile


def statistics_of(trainer, found):
    """Returns ``profile.json``'s ``'activations'`` and ``'gradients'``,
    each where its extension is in the trainer (``found``: ``{type:
    (name, extension)}``): ``'names'``, the links it watches, and
    ``'statistics'``, those it reports."""
    from chainer_hookext.extensions import activation_statistics
    from chainer_hookext.extensions import gradient_statistics
    out = {}
    for field, kind in (
            ('activations', activation_statistics.ActivationStatistics),
            ('gradients', gradient_statistics.GradientStatistics)):
        if kind in found:
            extension = found[kind][1]
            out[field] = {
                'names': list(dict.fromkeys(
                    extension.scope_link_names(trainer).values())),
                'statistics': list(extension.hook.statistics_names)}
    return out


def from_folder(out):
    """Returns the :class:`Run` of a result folder.

    Raises:
        RunError: No such folder, no log with a key of this package, or a
            file that cannot be read or holds something else (its shape
            is checked here: the page and ``compare`` read what is left).
    """
    if not os.path.isdir(out):
        raise RunError(f'{out}: no such folder; give the `out` folder of a '
                       'trainer')
    path = os.path.join(out, LOG_FILE)
    if not os.path.isfile(path):
        raise RunError(f'{out}: no LogReport log (`{LOG_FILE}`) in it; '
                       'extend the trainer with extensions.LogReport()')
    log = _read_json(path, _LOG_KIND)
    _check_shape(path, log, [_LOG_ENTRY], _LOG_KIND)
    if not any(has_our_keys(entry) for entry in log):
        raise RunError(
            f'{path}: no key of chainer_hookext in it '
            f'({", ".join(FAMILIES)}...); train with TimedLinks, TimedLoop '
            'or LinkMemory and LogReport')
    profile = {}
    path = os.path.join(out, PROFILE_FILE)
    if os.path.isfile(path):
        profile = _read_json(path, _PROFILE_KIND)
        _check_shape(path, profile, _PROFILE, _PROFILE_KIND)
    return Run(out, log, profile, traces_in(out))


def _read_json(path, kind):
    # The JSON value in ``path``, or a RunError naming it.
    try:
        with open(path, 'rb') as f:
            return json.loads(f.read().decode('utf-8'))
    except OSError as e:
        raise RunError(f'{path}: cannot be read ({e.strerror or e})')
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise RunError(f'{path}: {kind.what} ({e}){kind.fix}')


def files_in_out(trainer, but):
    """Returns ``{file name: who writes or reads it}`` of the files in the
    trainer's ``out`` that the trainer's extensions other than ``but``
    write (Chainer's log, plots and graph, an extension's public
    ``filename``, a snapshot's, when fixed) and that this package writes
    or reads there."""
    found = {
        LOG_FILE: 'the log `python -m chainer_hookext report` reads',
        PROFILE_FILE: 'the figures ProfileReport writes beside its page',
        TRACE_FOLDER: 'the folder of Timeline\'s traces'}
    for name, entry in _chainer.extension_entries(trainer).items():
        extension = entry.extension
        if extension is but:
            continue
        written = _chainer.written_file(extension)
        if written is None:  # a snapshot's file name, when fixed
            written = getattr(extension, 'filename', None)
        if isinstance(written, str) and '{' not in written:
            found[os.path.normpath(written)] = (
                f'the file of the extension {name!r}')
    return found


def check_page_name(trainer, report):
    """Refuses a page's file name that another file in the trainer's
    ``out`` has (:func:`files_in_out`).

    Args:
        trainer (~chainer.training.Trainer): The trainer.
        report (~chainer_hookext.ProfileReport): The extension writing
            the page, ``report.filename``.

    Raises:
        ValueError: Naming the clash and what works.
    """
    files = files_in_out(trainer, report)
    name = os.path.normpath(report.filename)
    top = name.split(os.sep)[0]
    clash = files.get(name) or files.get(top)
    if clash:
        taken = ', '.join(repr(n) for n in sorted(files))
        raise ValueError(
            f'`ProfileReport(filename={report.filename!r})` would write its '
            f'page over {clash} in the trainer\'s out at every trigger; give '
            f'a name no other file there has ({taken} are taken), such as '
            f'\'profile.html\'.')


def write_profile(run):
    """Writes ``run.profile`` to ``profile.json`` in ``run.out``,
    atomically."""
    _files.write_atomic(os.path.join(run.out, PROFILE_FILE), json.dumps(
        run.profile, indent=1).encode('utf-8'))


def has_our_keys(entry):
    """Returns whether a log entry holds a key of this package."""
    return any(key.startswith(FAMILIES) for key in entry)


def last_entry(run, prefix):
    """Returns the last log entry with a key starting with ``prefix``, or
    ``None``."""
    for entry in reversed(run.log):
        if any(key.startswith(prefix) for key in entry):
            return entry
    return None


def traces_in(out):
    """Returns the Timeline files in ``out``: windows by first iteration,
    then outlier traces (files being written beside them left out)."""
    folder = os.path.join(out, TRACE_FOLDER)
    found = {}  # {(outlier, first iteration, name): path}
    for path in glob.glob(os.path.join(folder, '*iteration_*.json*')):
        match = _TRACE.match(os.path.basename(path))
        if match:
            found[(bool(match.group(1)), int(match.group(2)),
                   os.path.basename(path))] = path
    return [found[key] for key in sorted(found)]


#: A traced iteration's memory (:func:`memory_trace`): ``name`` the
#: file's, ``iteration`` the slice's name, ``end_ms`` its length, ``points``
#: (:class:`MemoryPoint`), ``peak`` (:class:`TracePeak`, or ``None``).
MemoryTrace = collections.namedtuple(
    'MemoryTrace', ('name', 'iteration', 'end_ms', 'points', 'peak'))
#: The bytes alive from ``ms`` on: ``total``, ``categories``
#: ``{category: bytes}``, ``pool_used`` (``None`` on a CPU).
MemoryPoint = collections.namedtuple(
    'MemoryPoint', ('ms', 'total', 'categories', 'pool_used'))
#: The trace's ``memory peak`` event: ``ms``, ``total``, ``phase``,
#: ``where``, ``holders`` ``[{'category', 'holder', 'bytes'}]``.
TracePeak = collections.namedtuple(
    'TracePeak', ('ms', 'total', 'phase', 'where', 'holders'))


def memory_trace(path):
    """Returns the :class:`MemoryTrace` of the iteration holding the memory
    peak of a Timeline file (the first one without a peak event), or
    ``None`` when the file has no memory counter (``memory=False``)."""
    from chainer_hookext.timing import trace
    from chainer_hookext.timing import trace_events
    events = trace.read(path)
    counters = sorted((e for e in events if e.get('ph') == 'C' and (
        e.get('name') == trace_events.MEMORY_COUNTER)), key=lambda e: e['ts'])
    iterations = sorted((e for e in events if e.get('ph') == 'X' and (
        e.get('cat') == 'iteration')), key=lambda e: e['ts'])
    if not counters or not iterations:
        return None
    peaks = [e for e in events if e.get('ph') == 'i' and (
        e.get('name') == trace_events.MEMORY_PEAK)]
    shown = iterations[0]
    if peaks:  # the iteration holding it, its end included
        at = peaks[0]['ts']
        shown = next((e for e in iterations
                      if e['ts'] <= at <= e['ts'] + e['dur']), shown)
    start, end = shown['ts'], shown['ts'] + shown['dur']
    pool = {e['ts']: e['args'].get('used') for e in events
            if e.get('ph') == 'C' and e.get('name') == (
                trace_events.POOL_COUNTER)}
    points = [MemoryPoint((e['ts'] - start) / 1e3, sum(e['args'].values()),
                          dict(e['args']), pool.get(e['ts']))
              for e in counters if start <= e['ts'] <= end]
    peak = None
    if peaks and start <= peaks[0]['ts'] <= end:
        args = peaks[0].get('args', {})
        peak = TracePeak((peaks[0]['ts'] - start) / 1e3, args.get('total'),
                         args.get('phase'), args.get('where'),
                         list(args.get('holders', [])))
    return MemoryTrace(os.path.basename(path), shown.get('name', ''),
                       (end - start) / 1e3, points, peak)


def _log_of(trainer):
    from chainer.training import extensions
    for entry in _chainer.extension_entries(trainer).values():
        if isinstance(entry.extension, extensions.LogReport):
            return entry.extension.log
    path = os.path.join(trainer.out, LOG_FILE)
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    return []


# -- the shape of the files read ----------------------------------------------
#: What a file read is not when its shape is wrong, and what to do.
_Kind = collections.namedtuple('_Kind', ('what', 'fix'))
_LOG_KIND = _Kind('not a LogReport log', '')
_PROFILE_KIND = _Kind(
    'not ProfileReport\'s figures', '; remove it (the page is drawn from '
    'the log without it) or let ProfileReport write it again')
#: A shape: a JSON object with these fields (each optional but those in
#: ``required``); the fields not named are not checked.
_Object = collections.namedtuple('_Object', ('fields', 'required'),
                                 defaults=((),))
#: A shape: a JSON object whose every value has ``shape``.
_Each = collections.namedtuple('_Each', ('shape',))
#: A shape: ``null`` or ``shape``.
_Maybe = collections.namedtuple('_Maybe', ('shape',))
_NUMBER = (int, float)
_TEXT = (str, type(None))


class _OurKeys(dict):
    """The shape of a log entry: every key of this package a number."""


_LOG_ENTRY = _OurKeys(epoch=_NUMBER, iteration=_NUMBER)
_PROFILE = _Object({
    'config': _Object({
        'model': _TEXT, 'optimizer': _TEXT,
        'batch_size': (int, type(None)), 'iteration': _NUMBER,
        'epoch': _NUMBER, 'extensions': [str],
        'trainer_extensions': [str]}),
    'links': _Object({
        'links': _Each(_Object(dict.fromkeys(
            [f.field for f in keys.FIGURES] + ['rest_time'], _NUMBER))),
        'functions': _Each(_Object(dict.fromkeys(
            records.FUNCTION_FIELDS, _NUMBER), ('time', 'backward_time',
                                                'occurrence'))),
        'names': [str],
        'peaks': _Each(_NUMBER),
        'roofline': _Each(_Each(_Maybe(_Object(dict.fromkeys(
            ('flops', 'bytes', 'seconds', 'rate', 'intensity', 'percent'),
            _NUMBER))))),
    }),
    'memory': _Each(_Object(dict.fromkeys(
        [f.field for f in keys.MEMORY_FIGURES], _NUMBER))),
    'loop': bool, 'timeline': bool})

_WHAT = {dict: 'an object', list: 'a list', str: 'a string',
         bool: 'true or false', _NUMBER: 'a number', _TEXT: 'a string',
         (int, type(None)): 'an integer'}


def _check_shape(path, value, shape, kind, where=''):
    # Raises RunError naming ``path``, the place and the value that does
    # not have ``shape``, and what the file is not (a _Kind).
    def wrong(what):
        at = f' at `{where}`' if where else ''
        return RunError(f'{path}: {kind.what} ({reprlib.repr(value)}{at} is '
                        f'not {what}){kind.fix}')

    def inner(key, item, item_shape):
        _check_shape(path, item, item_shape, kind,
                     f'{where}{"." if where else ""}{key}')
    if isinstance(shape, _Maybe):
        if value is not None:
            _check_shape(path, value, shape.shape, kind, where)
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise wrong('a list')
        for i, item in enumerate(value):
            inner(f'{i}', item, shape[0])
    elif isinstance(shape, (_Object, _Each, _OurKeys)):
        if not isinstance(value, dict):
            raise wrong('an object')
        for key in shape.required if isinstance(shape, _Object) else ():
            if key not in value:
                raise wrong(f'an object with `{key}`')
        for key, item in value.items():
            if isinstance(shape, _Each):
                inner(key, item, shape.shape)
            elif isinstance(shape, _Object) and key in shape.fields:
                inner(key, item, shape.fields[key])
            elif isinstance(shape, _OurKeys) and (
                    key in shape or key.startswith(FAMILIES)):
                inner(key, item, shape.get(key, _NUMBER))
    elif not isinstance(value, shape) or (
            shape is _NUMBER and isinstance(value, bool)):
        raise wrong(_WHAT.get(shape, shape))

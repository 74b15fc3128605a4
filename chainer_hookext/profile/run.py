"""One run as the profile sees it: its log, ``profile.json`` and traces,
from a trainer or a result folder (docs/profile.md).
"""

import bisect
import collections
import glob
import json
import os
import re
import reprlib

from chainer.training import triggers

from chainer_hookext import _chainer
from chainer_hookext import _files
from chainer_hookext import plots
from chainer_hookext.report import keys
from chainer_hookext.timing import records
from chainer_hookext.timing import trace
from chainer_hookext.timing import trace_events

PROFILE_FILE = 'profile.json'
LOG_FILE = 'log'
TRACE_FOLDER = 'timeline'
_TRACE = re.compile(r'(outlier_)?iteration_(\d+)(?:_rank\d+)?\.json(?:\.gz)?$')

#: ``log``: LogReport's entries; ``traces``: Timeline's files, windows first.
Run = collections.namedtuple('Run', ('out', 'log', 'profile', 'traces'))


class RunError(ValueError):
    """A result folder that cannot be read as a run."""


def from_trainer(trainer, log=None):
    """The :class:`Run` of a trainer now."""
    return Run(trainer.out, list(_log_of(trainer) if log is None else log),
               collect(trainer), traces_in(trainer.out))


def collect(trainer):
    """What ``profile.json`` holds for ``trainer``."""
    from chainer_hookext.extensions import activation_statistics
    from chainer_hookext.extensions import gradient_statistics
    from chainer_hookext.extensions import link_memory
    from chainer_hookext.extensions import timed_links
    from chainer_hookext.extensions import timed_loop
    from chainer_hookext.extensions import timeline

    updater = trainer.updater
    optimizer = updater.get_optimizer('main') if (
        'main' in updater.get_all_optimizers()) else None
    try:
        iterator = updater.get_iterator('main')
    except (AttributeError, KeyError):  # an updater of another shape
        iterator = None
    entries = _chainer.extension_entries(trainer)
    found = {type(entry.extension): (name, entry.extension)  # the first
             for name, entry in reversed(entries.items())}
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
            'trainer_extensions': list(entries),
            'iterator': None if iterator is None else
            type(iterator).__name__,
            'triggers': {
                name: [entry.trigger.period, entry.trigger.unit]
                if isinstance(entry.trigger, triggers.IntervalTrigger)
                else None
                for name, entry in entries.items()},
        },
    }
    if timed_links.TimedLinks in found:
        timed = found[timed_links.TimedLinks][1]
        profile['links'] = plots.link_times(timed)
        profile['links']['names'] = [
            n for n in timed.summary(by='name') if n != keys.OUTSIDE]
    if link_memory.LinkMemory in found:
        memory = found[link_memory.LinkMemory][1]
        profile['memory'] = memory.summary()
        peak = memory.peak_summary()
        if peak is not None:
            profile['memory_peak'] = peak
    for field, kind in (('loop', timed_loop.TimedLoop),
                        ('timeline', timeline.Timeline)):
        if kind in found:
            profile[field] = True
    for field, kind in (
            ('activations', activation_statistics.ActivationStatistics),
            ('gradients', gradient_statistics.GradientStatistics)):
        if kind in found:
            extension = found[kind][1]
            profile[field] = {
                'names': list(dict.fromkeys(
                    extension.scope_link_names(trainer).values())),
                'statistics': list(extension.hook.statistics_names)}
    return profile


def from_folder(out):
    """The :class:`Run` of a result folder, else :class:`RunError`."""
    if not os.path.isdir(out):
        raise RunError(f'{out}: no such folder; give the `out` folder of a '
                       'trainer')
    path = os.path.join(out, LOG_FILE)
    if not os.path.isfile(path):
        raise RunError(f'{out}: no LogReport log (`{LOG_FILE}`) in it; '
                       'extend the trainer with extensions.LogReport()')
    log = _read_json(path, _LOG_KIND)
    _check_shape(path, log, [_LOG_ENTRY], _LOG_KIND)
    ours = keys.TRAIN_PREFIXES
    if not any(key.startswith(ours) for entry in log for key in entry):
        raise RunError(
            f'{path}: no key of chainer_hookext in it '
            f'({", ".join(ours)}...); train with TimedLinks, TimedLoop '
            'or LinkMemory and LogReport')
    profile = {}
    path = os.path.join(out, PROFILE_FILE)
    if os.path.isfile(path):
        profile = _read_json(path, _PROFILE_KIND)
        _check_shape(path, profile, _PROFILE, _PROFILE_KIND)
    return Run(out, log, profile, traces_in(out))


def _read_json(path, kind):
    try:
        with open(path, 'rb') as f:
            return json.loads(f.read().decode('utf-8'))
    except OSError as e:
        raise RunError(f'{path}: cannot be read ({e.strerror or e})')
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise RunError(f'{path}: {kind.what} ({e}){kind.fix}')


def files_in_out(trainer, but):
    """``{file name: who}`` in the trainer's ``out``, but ``but``'s."""
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
    """Raises ``ValueError`` when ``report.filename`` is another file's."""
    files = files_in_out(trainer, report)
    name = os.path.normpath(report.filename)
    clash = files.get(name) or files.get(name.split(os.sep)[0])
    if clash:
        taken = ', '.join(repr(n) for n in sorted(files))
        raise ValueError(
            f'`ProfileReport(filename={report.filename!r})` would write its '
            f'page over {clash} in the trainer\'s out at every trigger; give '
            f'a name no other file there has ({taken} are taken), such as '
            f'\'profile.html\'.')


def write_profile(run):
    """Writes ``run.profile`` to ``profile.json``, atomically."""
    _files.write_atomic(os.path.join(run.out, PROFILE_FILE), json.dumps(
        run.profile, indent=1).encode('utf-8'))


def last_entry(run, prefix):
    """The last log entry with a key starting with ``prefix``, or None."""
    return next((entry for entry in reversed(run.log)
                 if any(key.startswith(prefix) for key in entry)), None)


def traces_in(out):
    """The Timeline files in ``out``: windows by first iteration first."""
    found = {}  # {(outlier, first iteration, name): path}
    for path in glob.glob(os.path.join(out, TRACE_FOLDER, '*iteration_*')):
        match = _TRACE.match(os.path.basename(path))
        if match:
            found[(bool(match.group(1)), int(match.group(2)),
                   os.path.basename(path))] = path
    return [found[key] for key in sorted(found)]


#: ``iteration``: the slice's name, ``end_ms`` its length.
MemoryTrace = collections.namedtuple(
    'MemoryTrace', ('name', 'iteration', 'end_ms', 'points', 'peak'))
#: The bytes alive from ``ms`` on (``pool_used``: ``None`` on a CPU).
MemoryPoint = collections.namedtuple(
    'MemoryPoint', ('ms', 'total', 'categories', 'pool_used'))
TracePeak = collections.namedtuple(
    'TracePeak', ('ms', 'total', 'phase', 'where', 'holders'))


def memory_trace(path):
    """The memory of the iteration holding a Timeline file's peak (else
    its first), or ``None`` without memory counters."""
    events = trace.read(path)
    counters = [e for e in events if e.get('ph') == 'C' and (
        e.get('name') == trace_events.MEMORY_COUNTER)]
    # The first rank's only: an event carries the values that changed.
    pid = min((e.get('pid', 0) for e in counters), default=None)
    events = [e for e in events if e.get('pid', 0) == pid]
    counters = sorted((e for e in counters if e.get('pid', 0) == pid),
                      key=lambda e: e['ts'])
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
    pool = sorted((e['ts'], e['args']['used']) for e in events
                  if e.get('ph') == 'C' and e.get('name') == (
                      trace_events.POOL_COUNTER) and 'used' in e['args'])
    pool_times = [ts for ts, _ in pool]
    values, points = {}, []
    for e in counters:
        values.update(e['args'])
        if start <= e['ts'] <= end:
            at = bisect.bisect_right(pool_times, e['ts'])
            points.append(MemoryPoint(
                (e['ts'] - start) / 1e3, sum(values.values()), dict(values),
                pool[at - 1][1] if at else None))
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
_Kind = collections.namedtuple('_Kind', ('what', 'fix'))
_LOG_KIND = _Kind('not a LogReport log', '')
_PROFILE_KIND = _Kind(
    'not ProfileReport\'s figures', '; remove it (the page is drawn from '
    'the log without it) or let ProfileReport write it again')
# Shapes: fields (optional unless ``required``; ``ours``: every key of this
# package a number too); every value; null or shape.
_Object = collections.namedtuple('_Object', ('fields', 'required', 'ours'),
                                 defaults=((), False))
_Each = collections.namedtuple('_Each', ('shape',))
_Maybe = collections.namedtuple('_Maybe', ('shape',))
_NUMBER = (int, float)
_TEXT = (str, type(None))

_LOG_ENTRY = _Object({'epoch': _NUMBER, 'iteration': _NUMBER}, ours=True)
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
    elif isinstance(shape, (_Object, _Each)):
        if not isinstance(value, dict):
            raise wrong('an object')
        for key in shape.required if isinstance(shape, _Object) else ():
            if key not in value:
                raise wrong(f'an object with `{key}`')
        for key, item in value.items():
            if isinstance(shape, _Each):
                inner(key, item, shape.shape)
            elif key in shape.fields:
                inner(key, item, shape.fields[key])
            elif shape.ours and key.startswith(keys.TRAIN_PREFIXES):
                inner(key, item, _NUMBER)
    elif not isinstance(value, shape) or (
            shape is _NUMBER and isinstance(value, bool)):
        raise wrong(_WHAT.get(shape, shape))

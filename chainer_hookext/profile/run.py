"""One training run as the profile sees it: its log, its figures, its traces.

A :class:`Run` is read from a running trainer (:func:`from_trainer`, what
:class:`~chainer_hookext.ProfileReport` writes) or from the result folder
of a finished or interrupted run (:func:`from_folder`, what the command
line reads): ``LogReport``'s log, ``profile.json`` (the figures that are
not in the log: the whole run's per-link summary, the roofline, the
function types, the last measured memory) and ``timeline/*.json.gz``.
"""

import collections
import glob
import json
import os

from chainer.training import triggers

from chainer_hookext import _chainer
from chainer_hookext import _files
from chainer_hookext.report import keys

#: The file, in the trainer's ``out``, of the figures not in the log.
PROFILE_FILE = 'profile.json'
#: ``LogReport``'s default file name.
LOG_FILE = 'log'

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
    if timed_loop.TimedLoop in found:
        profile['loop'] = True
    if timeline.Timeline in found:
        profile['timeline'] = True
    return profile


def from_folder(out):
    """Returns the :class:`Run` of a result folder.

    Raises:
        RunError: No such folder, or no log with a key of this package.
    """
    if not os.path.isdir(out):
        raise RunError('{}: no such folder; give the `out` folder of a '
                       'trainer'.format(out))
    path = os.path.join(out, LOG_FILE)
    if not os.path.isfile(path):
        raise RunError('{}: no LogReport log (`{}`) in it; extend the '
                       'trainer with extensions.LogReport()'.format(
                           out, LOG_FILE))
    try:
        with open(path) as f:
            log = json.load(f)
    except ValueError as e:
        raise RunError('{}: not a LogReport log ({})'.format(path, e))
    if not isinstance(log, list) or not any(
            isinstance(entry, dict) and has_our_keys(entry)
            for entry in log):
        raise RunError(
            '{}: no key of chainer_hookext in it ({}...); train with '
            'TimedLinks, TimedLoop or LinkMemory and LogReport'.format(
                path, ', '.join(FAMILIES)))
    profile = {}
    path = os.path.join(out, PROFILE_FILE)
    if os.path.isfile(path):
        with open(path) as f:
            profile = json.load(f)
    return Run(out, log, profile, traces_in(out))


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
    then outlier traces."""
    folder = os.path.join(out, 'timeline')

    def number(path):
        digits = ''.join(c if c.isdigit() else ' ' for c in
                         os.path.basename(path)).split()
        return int(digits[0]) if digits else 0
    windows = sorted(glob.glob(os.path.join(folder, 'iteration_*.json*')),
                     key=number)
    outliers = sorted(glob.glob(os.path.join(
        folder, 'outlier_iteration_*.json*')), key=number)
    return windows + outliers


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

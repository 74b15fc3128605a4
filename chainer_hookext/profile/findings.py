"""What a run's figures say to do: one function per rule, its threshold
beside it (docs/profile.md, the table of rules).
"""

import collections
import itertools
import typing

from chainer_hookext.profile import run as run_module
from chainer_hookext.report import keys
from chainer_hookext.report import units
from chainer_hookext.timing import phases


#: What a finding's ``number`` and ``saving`` are shares of.
TIME = 'time'
ACTIVATIONS = 'activations'

#: The rules' thresholds (shares of the training's time or activations).
MIN_SAVING = 0.01
TRIGGER_TARGET = 0.025
DATA_SHARE = 0.05
GC_SHARE = 0.01
FORGET_SHARE = 0.10
#: An overhead-bound point's ``bound`` (:mod:`~.costs.roofline`).
OVERHEAD = 'overhead'
PARALLEL_ITERATORS = ('MultiprocessIterator', 'MultithreadIterator')


class Finding(typing.NamedTuple):
    """One thing to do; its fields are in docs/profile.md (the findings).

    >>> Finding('gc', 'Python\\'s garbage collector takes 4.0% of the '
    ...         'training', 0.04, 0.04, 'call gc.freeze() after set-up',
    ...         TIME).text
    "Python's garbage collector takes 4.0% of the training; call \
gc.freeze() after set-up."
    """

    rule: str
    what: str
    number: float
    saving: float
    action: str
    of: str

    @property
    def text(self) -> str:
        """The sentence a user reads."""
        return f'{self.what}; {self.action}.'


def findings(run: run_module.Run) -> typing.List[Finding]:
    """The findings of ``run``: largest time saving first, then memory."""
    found = []
    for rule in (_triggers, _data, _gc, _batch, _forget):
        found.extend(rule(run))
    found = [f for f in found if f.of != TIME or f.saving >= MIN_SAVING]
    return sorted(found, key=lambda f: (f.of != TIME, -f.saving))


def link_names(run):
    """The names of the links timed, from ``profile.json``."""
    return list(run.profile.get('links', {}).get('names', ()))


def link_seconds(entry, names):
    """``{name: (forward, backward)}`` self seconds of a log entry."""
    out = collections.OrderedDict((name, tuple(
        entry.get(keys.figure_key('train', name, field), 0.0)
        for field in ('self_time', 'backward_self_time'))) for name in names)
    out[keys.OUTSIDE] = (0.0, entry.get(
        keys.figure_key('train', keys.OUTSIDE, 'backward_time'), 0.0))
    return out


def loop_shares(run):
    """``{loop figure: share of the training}`` over every report, each
    weighted by its iterations; ``{}`` without TimedLoop."""
    names = run.profile.get('config', {}).get('trainer_extensions', ())
    shown = {keys.loop_key(f): f for f in keys.loop_figures(names)}
    totals = collections.Counter()
    last = 0
    for entry in run.log:
        if keys.loop_key(keys.ITERATION) not in entry:
            continue
        count = entry.get('iteration', last + 1) - last
        last = entry.get('iteration', last + 1)
        for key, figure in shown.items():
            if isinstance(entry.get(key), (int, float)):
                totals[figure] += entry[key] * count
    whole = totals.get(keys.ITERATION, 0.0)
    return {k: v / whole for k, v in totals.items()} if whole > 0 else {}


# -- the rules ----------------------------------------------------------------
def _triggers(run):
    shares = loop_shares(run)
    config = run.profile.get('config', {})
    triggers = config.get('triggers', {})
    found = []
    for name in config.get('trainer_extensions', ()):
        share = shares.get(keys.phase_figure(phases.ExtensionPhase(name)), 0)
        if share <= TRIGGER_TARGET:
            continue
        times = _sparser(share)
        trigger = triggers.get(name)
        action = f'a trigger {times} times sparser'
        if trigger:
            period, unit = trigger
            length = config.get(unit)
            if isinstance(length, int) and period * times > length:
                # No sparser interval fits the run: once, at its end.
                times = length // period
                if times < 2:
                    continue
                action = (f'trigger=({period * times}, {unit!r}), once in '
                          f'this run of {length} {unit}s,')
            else:
                action = f'trigger=({period * times}, {unit!r})'
        after = share / times
        found.append(Finding(
            'trigger', f'{name} takes {_percent(share)} of the training',
            share, share - after, f'{action} would bring it to '
            f'{_percent(after)}, saving {_percent(share - after)}', TIME))
    return found


def _sparser(share):
    steps = (m * 10 ** k for k in itertools.count() for m in (2, 5, 10))
    return next(t for t in steps if share / t <= TRIGGER_TARGET)


def _data(run):
    share = loop_shares(run).get(phases.DATA, 0.0)
    if share < DATA_SHARE:
        return []
    iterator = run.profile.get('config', {}).get('iterator')
    if iterator in PARALLEL_ITERATORS:
        action = (f'more workers ({iterator}\'s n_processes= or n_threads=) '
                  f'would load more of it while the model trains')
    else:
        action = ('MultiprocessIterator (MultithreadIterator where the '
                  'dataset cannot be pickled) would load the next batches '
                  'while the model trains')
    return [Finding(
        'data', f'Loading the data (`data`) takes {_percent(share)} of the '
        f'training', share, share, f'{action}, saving up to '
        f'{_percent(share)}', TIME)]


def _gc(run):
    share = loop_shares(run).get(keys.GC, 0.0)
    if share < GC_SHARE:
        return []
    return [Finding(
        'gc', f'Python\'s garbage collector takes {_percent(share)} of the '
        f'training', share, share, 'gc.freeze() after set-up (before '
        'trainer.run()) would keep the dataset and the model out of its '
        f'collections, saving up to {_percent(share)}', TIME)]


def _batch(run):
    # Twice the samples: half the overhead-bound self time per sample.
    links = run.profile.get('links', {})
    config = run.profile.get('config', {})
    iterations, batch = config.get('iteration'), config.get('batch_size')
    per_iteration = _iteration_seconds(run)
    if not iterations or not batch or not per_iteration:
        return []
    bound = collections.Counter()  # {link: overhead-bound seconds}
    for path, ways in (links.get('roofline') or {}).items():
        row = links.get('links', {}).get(path, {})
        for way, field in (('forward', 'self_time'),
                           ('backward', 'backward_self_time')):
            point = (ways or {}).get(way)
            if point and point.get('bound') == OVERHEAD:
                bound[path] += row.get(field, 0.0) / iterations
    if not bound:
        return []
    share = sum(bound.values()) / per_iteration
    largest = [path for path, _ in bound.most_common(3)]
    names = ', '.join(largest) + (', ...' if len(bound) > 3 else '')
    return [Finding(
        'batch', f'{len(bound)} link{" is" if len(bound) == 1 else "s are"}'
        f' overhead-bound ({names}), '
        f'{_percent(share)} of the training', share, share / 2,
        f'batch_size={2 * batch} would spread their overhead over twice '
        f'the samples, saving up to {_percent(share / 2)} per sample', TIME)]


def _iteration_seconds(run):
    for entry in reversed(run.log):
        if keys.loop_key(keys.ITERATION) in entry:
            return entry[keys.loop_key(keys.ITERATION)]
        if entry.get('elapsed_time') and entry.get('iteration'):
            return entry['elapsed_time'] / entry['iteration']
    return None


def _forget(run):
    entry = run_module.last_entry(run, keys.prefix('train', keys.MEMORY))
    names = link_names(run) or list(run.profile.get('memory', {}))
    if entry is None or not names:
        return []
    self_figure, forgettable = (
        next(f for f in keys.MEMORY_FIGURES if f.field == field)
        for field in ('self_activations', 'forgettable'))
    whole = sum(entry.get(keys.memory_key(name, self_figure), 0)
                for name in names if name != keys.OUTSIDE)
    # Not the whole model (no '/'), nor inside another one chosen.
    freed = {name: entry.get(keys.memory_key(name, forgettable), 0)
             for name in names if '/' in name}
    found, chosen = [], []
    for name in sorted(freed, key=lambda n: -freed[n]):
        share = freed[name] / whole if whole > 0 else 0.0
        if share < FORGET_SHARE:
            break
        if any(name.startswith(c + '/') or c.startswith(name + '/')
               for c in chosen):
            continue
        chosen.append(name)
        found.append(Finding(
            'forget', f'{name} keeps {units.nbytes(freed[name])} for '
            f'backward that F.forget would free ({_percent(share)} of the '
            f'activations)', share, share, f'F.forget around it would free '
            f'them for {_cost(run, name)}', ACTIVATIONS))
    return found


def _cost(run, name):
    times = run_module.last_entry(run, keys.prefix('train', keys.TIME)) or {}
    forward = times.get(keys.figure_key('train', name, 'elapsed_time'))
    if forward is None:
        return 'its forward again in backward'
    share = forward / (_iteration_seconds(run) or float('inf'))
    return (f'its forward again in backward ({units.seconds(forward)}, '
            f'{_percent(share)} of each iteration)')


def _percent(share):
    return f'{100 * share:.1f}%'

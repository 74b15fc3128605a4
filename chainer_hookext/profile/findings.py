"""The few findings of a run that matter most, each with its number.

:func:`findings` reads a :class:`~.run.Run`: the last report of each
extension in the log, and ``profile.json``.  Each :class:`Finding` is one
sentence a user can act on: the slowest links and their share of the
model's time, links far under the machine's roofline, the biggest memory
holders and the ``F.forget`` candidates, the loop's heaviest phase or
extension ("``PlotReport`` takes 33% of each iteration"), the function
type that takes the most time.  Keys are built with
:mod:`~chainer_hookext.report.keys`, never parsed.
"""

import collections

from chainer_hookext.profile import run as run_module
from chainer_hookext.report import keys
from chainer_hookext.report import units
from chainer_hookext.timing import phases

#: One finding: ``topic`` (``'links'``, ``'roofline'``, ``'memory'``,
#: ``'loop'``, ``'functions'``), ``text`` (one sentence), ``share`` (the
#: fraction of its whole the finding is about, 0 to 1).
Finding = collections.namedtuple('Finding', ('topic', 'text', 'share'))

#: Links far under the roofline: below this percentage of a peak.
FAR_UNDER = 10.0


def findings(run, top=2):
    """Returns the findings of ``run``, topic by topic.

    Args:
        run (~.run.Run): The run.
        top (int): Findings at most per topic (the links' one more).

    Returns:
        list of Finding: Each topic's largest first; topics whose
        extension did not run give none.
    """
    out = []
    for topic in (_links, _loop, _functions, _roofline, _memory):
        out.extend(topic(run)[:top + (topic is _links)])
    return out


def link_names(run):
    """The names of the links timed, from ``profile.json`` (``[]``
    without)."""
    return list(run.profile.get('links', {}).get('names', ()))


def link_seconds(entry, names):
    """Returns ``{name: (forward self, backward self)}`` seconds per
    iteration of a log entry, and ``(outside)``'s backward."""
    out = collections.OrderedDict()
    for name in names + [keys.OUTSIDE]:
        forward = entry.get(keys.figure_key('train', name, 'self_time'), 0.0)
        backward = entry.get(
            keys.figure_key('train', name, 'backward_self_time'), 0.0)
        if name == keys.OUTSIDE:
            forward, backward = 0.0, entry.get(
                keys.figure_key('train', name, 'backward_time'), 0.0)
        out[name] = (forward, backward)
    return out


def _links(run):
    entry = run_module.last_entry(run, keys.TIME + '/')
    names = link_names(run)
    if entry is None or not names:
        return []
    seconds = link_seconds(entry, names)
    whole = sum(f + b for f, b in seconds.values())
    if whole <= 0:
        return []
    found = []
    for name, (forward, backward) in seconds.items():
        share = (forward + backward) / whole
        text = ('{} takes {:.0f}% of the model\'s time ({} per iteration: '
                'forward {}, backward {}).'.format(
                    name, 100 * share, units.seconds(forward + backward),
                    units.seconds(forward), units.seconds(backward)))
        found.append(Finding('links', text, share))
    return sorted(found, key=lambda f: -f.share)


def _loop(run):
    entry = run_module.last_entry(run, keys.LOOP_PREFIX)
    if entry is None:
        return []
    iteration = entry.get(keys.LOOP_PREFIX + keys.ITERATION, 0.0)
    if iteration <= 0:
        return []
    names = run.profile.get('config', {}).get('trainer_extensions', ())
    found = []
    for phase in phases.UPDATE_PHASES + tuple(
            phases.ExtensionPhase(n) for n in names) + (phases.OTHER,):
        figure = keys.phase_figure(phase)
        value = entry.get(keys.LOOP_PREFIX + figure)
        if not value:
            continue
        what = phase.name if isinstance(phase, phases.ExtensionPhase) else (
            '`{}`'.format(phase))
        share = value / iteration
        found.append(Finding('loop', '{} takes {:.0f}% of each iteration '
                             '({} of {}).'.format(what, 100 * share,
                                                  units.seconds(value),
                                                  units.seconds(iteration)),
                             share))
    gc = entry.get(keys.LOOP_PREFIX + keys.GC, 0.0)
    if gc / iteration >= 0.05:
        found.append(Finding('loop', 'The garbage collector takes {:.0f}% of '
                             'each iteration.'.format(100 * gc / iteration),
                             gc / iteration))
    return sorted(found, key=lambda f: -f.share)


def _functions(run):
    entry = run_module.last_entry(run, keys.TIME + '/' + keys.FUNCTION + '/')
    types = run.profile.get('links', {}).get('functions', {})
    if entry is None or not types:
        return []
    figures = [f for f in keys.FUNCTION_FIGURES if f.family == keys.TIME]
    seconds = {name: sum(entry.get(keys.function_key('train', name, f), 0.0)
                         for f in figures) for name in types}
    whole = sum(seconds.values())
    if whole <= 0:
        return []
    return sorted((Finding(
        'functions', '{} takes {:.0f}% of the time in function nodes ({} per '
        'iteration, forward and backward).'.format(
            name, 100 * value / whole, units.seconds(value)), value / whole)
        for name, value in seconds.items()), key=lambda f: -f.share)


def _roofline(run):
    links = run.profile.get('links', {})
    points = links.get('roofline')
    summary = links.get('links', {})
    if not points:
        return []
    whole = sum(row.get('self_time', 0.0) + row.get('backward_self_time',
                                                    0.0)
                for key, row in summary.items() if key != keys.OUTSIDE)
    found = []
    for path, ways in points.items():
        for way, point in sorted((ways or {}).items()):
            if not point or not point.get('flops') or point.get(
                    'percent', 100.0) >= FAR_UNDER:
                continue
            row = summary.get(path, {})
            seconds = row.get('self_time' if way == 'forward' else
                              'backward_self_time', 0.0)
            share = seconds / whole if whole > 0 else 0.0
            found.append(Finding(
                'roofline', '{} runs its {} at {:.1f}% of the peak, {}-bound '
                '({:.2f} FLOPs per byte), in {:.0f}% of the model\'s time.'
                .format(path, way, point['percent'], point['bound'],
                        point.get('intensity', 0.0), 100 * share), share))
    return sorted(found, key=lambda f: -f.share)


def _memory(run):
    entry = run_module.last_entry(run, keys.MEMORY + '/')
    names = link_names(run) or list(run.profile.get('memory', {}))
    if entry is None or not names:
        return []
    self_figure, forgettable = (
        [f for f in keys.MEMORY_FIGURES if f.field == field][0]
        for field in ('self_activations', 'forgettable'))
    kept = {name: entry.get(keys.memory_key(name, self_figure), 0)
            for name in names if name != keys.OUTSIDE}
    whole = sum(kept.values())
    found = []
    if whole > 0:
        for name, value in kept.items():
            if value:
                found.append(Finding(
                    'memory', '{} keeps {} for backward ({:.0f}% of the '
                    'activations).'.format(name, units.nbytes(value),
                                           100 * value / whole),
                    value / whole))
    found.sort(key=lambda f: -f.share)
    # Around a link of the model, not the whole model (an optimizer's
    # target, a name of one part).
    freed = {name: entry.get(keys.memory_key(name, forgettable), 0)
             for name in names if '/' in name}
    best = max(freed, key=lambda n: freed[n], default=None)
    if best is not None and freed[best] > 0 and whole > 0:
        times = run_module.last_entry(run, keys.TIME + '/') or {}
        forward = times.get(keys.figure_key('train', best, 'elapsed_time'))
        cost = ('its forward run again in backward' if forward is None else
                'for its forward again in backward ({} per iteration)'.format(
                    units.seconds(forward)))
        found.insert(0, Finding(
            'memory', 'F.forget around {} would free {} ({:.0f}% of the '
            'activations), {}.'.format(best, units.nbytes(freed[best]),
                                       100 * freed[best] / whole, cost),
            freed[best] / whole))
    return found

"""Every reported key of the package, built from named figures; no key is
parsed back (docs/internals.md, "Adding a per-link figure"; the layouts in
docs/timing.md, docs/flops.md and docs/memory.md, "Keys").
"""

import collections

from chainer_hookext.timing import phases
from chainer_hookext.timing import records


#: Families: the first part of a training-mode key.
TIME = 'time'
FLOPS = 'flops'
#: Before the family in evaluation-mode keys.
EVAL_PREFIX = 'validation/'
OUTSIDE = records.OUTSIDE
LOOP_PREFIX = 'time/loop/'
EXTENSION_PREFIX = 'extension/'
#: TimedLoop's figures (docs/timing.md, "`TimedLoop`").
ITERATION = 'iteration'
EXTENSIONS = 'extensions'
GC = 'gc'
TAIL = ('max', 'p50', 'p90')
SLOWEST = 'slowest'
SLOWEST_RANK = SLOWEST + '/rank'

#: A link's figure: ``backward``: only when backward is timed; ``outside``:
#: for :data:`OUTSIDE` too; ``title``, ``mean_title``: its columns' titles.
Figure = collections.namedtuple('Figure', (
    'field', 'suffix', 'backward', 'outside', 'title', 'mean_title',
    'family'))

#: In table order; the first has the spread's columns over workers.
FIGURES = (
    Figure('elapsed_time', '', False, False, 'ElapsedTime', 'Mean', TIME),
    Figure('self_time', '/self', False, False, 'SelfTime', 'SelfMean', TIME),
    Figure('backward_time', '/backward', True, True, 'BackwardTime',
           'BackwardMean', TIME),
    Figure('backward_self_time', '/backward/self', True, False,
           'BackwardSelf', 'BackwardSelfMean', TIME),
    Figure('flops', '', False, False, 'FLOPs', 'FLOPsMean', FLOPS),
    Figure('self_flops', '/self', False, False, 'SelfFLOPs',
           'SelfFLOPsMean', FLOPS),
    Figure('backward_flops', '/backward', True, True, 'BackwardFLOPs',
           'BackwardFLOPsMean', FLOPS),
    Figure('backward_self_flops', '/backward/self', True, False,
           'BackwardSelfFLOPs', 'BackwardSelfFLOPsMean', FLOPS),
)
_FIGURES = {figure.field: figure for figure in FIGURES}

#: After the family in the keys of function types' figures.
FUNCTION = 'function'

#: A function type's figure (a ``FunctionEntry`` field), as :class:`Figure`.
FunctionFigure = collections.namedtuple('FunctionFigure', (
    'field', 'suffix', 'backward', 'title', 'family'))

FUNCTION_FIGURES = (
    FunctionFigure('time', '', False, 'Time', TIME),
    FunctionFigure('backward_time', '/backward', True, 'BackwardTime', TIME),
    FunctionFigure('flops', '', False, 'FLOPs', FLOPS),
    FunctionFigure('backward_flops', '/backward', True, 'BackwardFLOPs',
                   FLOPS),
)


def function_figures(backward, flops=False):
    """The :data:`FUNCTION_FIGURES` reported, as :func:`link_figures`."""
    return tuple(f for f in FUNCTION_FIGURES if (
        backward or not f.backward) and (flops or f.family != FLOPS))


def function_key(mode, function, figure):
    """The key of a function type's figure.

    >>> function_key('train', 'LinearFunction', FUNCTION_FIGURES[1])
    'time/function/LinearFunction/backward'
    >>> function_key('eval', 'ReLU', FUNCTION_FIGURES[2])
    'validation/flops/function/ReLU'
    """
    return prefix(mode, figure.family) + FUNCTION + '/' + function + (
        figure.suffix)


def function_totals(rows):
    """One ``FunctionEntry`` per type, summed over links.

    >>> from chainer_hookext.timing.records import FunctionEntry
    >>> rows = function_totals([FunctionEntry('a', 'ReLU', 1.0, 2.0, 1),
    ...                         FunctionEntry('b', 'ReLU', 0.5, 0.5, 2)])
    >>> rows[0].time, rows[0].backward_time, rows[0].occurrence
    (1.5, 2.5, 3)
    """
    sums = {}
    for row in rows:
        mine = sums.get(row.function)
        sums[row.function] = row._replace(link=None) if mine is None else (
            mine._replace(**{f: getattr(mine, f) + getattr(row, f)
                             for f in records.FUNCTION_FIELDS}))
    return list(sums.values())


#: LinkMemory's family.
MEMORY = 'memory'

#: A ``LinkFigures`` field, as :class:`Figure`; ``gpu``: measured on a GPU
#: only; ``backward``: for the collision check.
MemoryFigure = collections.namedtuple('MemoryFigure', (
    'field', 'suffix', 'outside', 'gpu', 'title', 'backward'),
    defaults=(False,))

#: In table order (docs/memory.md, "Keys").
MEMORY_FIGURES = (
    MemoryFigure('activations', '/activations', True, False, 'Activations'),
    MemoryFigure('self_activations', '/activations/self', False, False,
                 'SelfActivations'),
    MemoryFigure('forgettable', '/forgettable', False, False, 'Forgettable'),
    MemoryFigure('params', '/params', False, False, 'Params'),
    MemoryFigure('grads', '/grads', False, False, 'Grads'),
    MemoryFigure('optimizer_state', '/optimizer_state', False, False,
                 'OptimizerState'),
    MemoryFigure('peak', '/peak', False, True, 'Peak'),
    MemoryFigure('backward_peak', '/backward/peak', True, True,
                 'BackwardPeak'),
)


def memory_figures(key, gpu):
    """The :data:`MEMORY_FIGURES` reported for a link or :data:`OUTSIDE`."""
    return tuple(f for f in MEMORY_FIGURES if (gpu or not f.gpu) and (
        f.outside or key != OUTSIDE))


def memory_key(key, figure):
    """The key of a memory figure of a link or :data:`OUTSIDE`.

    >>> memory_key('main/predictor', MEMORY_FIGURES[1])
    'memory/main/predictor/activations/self'
    """
    return MEMORY + '/' + key + figure.suffix


def activation_key(name, output, statistic):
    """The key of a statistic of the array at ``output`` in a link's output.

    >>> activation_key('main/predictor/l1', (), 'mean')
    'main/predictor/l1/out/mean'
    >>> activation_key('main/lstm', (1, 'h'), 'max')
    'main/lstm/out/1/h/max'
    """
    return _output_key(name, 'out', output, statistic)


def gradient_key(name, output, statistic):
    """:func:`activation_key` under ``grad``; never :func:`non_finite_key`.

    >>> gradient_key('main/predictor/l1', (), 'norm')
    'main/predictor/l1/grad/norm'
    >>> gradient_key('main/lstm', (1,), 'std')
    'main/lstm/grad/1/std'
    """
    if statistic == 'non_finite' and not output:
        raise ValueError('gradient_key: `non_finite` is NonFiniteGuard\'s '
                         'key under `<name>/grad/`')
    return _output_key(name, 'grad', output, statistic)


def _output_key(name, what, output, statistic):
    return '/'.join([name, what] + [str(k) for k in output] + [statistic])


def non_finite_key(link, what):
    """The key of NonFiniteGuard's count in ``what`` of a link.

    >>> non_finite_key('main/predictor/l1', 'grad')
    'main/predictor/l1/grad/non_finite'
    """
    return f'{link}/{what}/non_finite'


#: A figure's statistics over ChainerMN workers, under its key.
STATISTICS = ('min', 'max', 'slowest_rank')

#: One mode's ``Entry`` s and ``FunctionEntry`` s at one report, averaged
#: over ``per`` training iterations or outermost eval calls.
Report = collections.namedtuple(
    'Report', ('mode', 'per', 'entries', 'functions'), defaults=((),))


def prefix(mode, family=TIME):
    """The key prefix of a family's figures in ``mode``.

    >>> prefix('eval', FLOPS)
    'validation/flops/'
    """
    return ('' if mode == 'train' else EVAL_PREFIX) + family + '/'


#: The prefixes of the package's training-mode keys, one per family.
TRAIN_PREFIXES = tuple(prefix('train', family)
                       for family in (TIME, FLOPS, MEMORY))


def backward_reported(mode, backward):
    """Whether backward figures are reported (evaluation has none)."""
    return backward and mode == 'train'


def link_figures(backward, flops=False):
    """The :data:`FIGURES` of a link, with backward and FLOPs ones or not."""
    return tuple(f for f in FIGURES if (backward or not f.backward) and (
        flops or f.family != FLOPS))


def reported(mode, key, backward, flops=False):
    """The :class:`Figure` s reported for a link or :data:`OUTSIDE`."""
    if key == OUTSIDE:
        return tuple(f for f in link_figures(True, flops) if f.outside)
    return link_figures(backward_reported(mode, backward), flops)


def figure_key(mode, key, field):
    """The key of one field of one entry.

    >>> figure_key('train', 'main/predictor', 'backward_self_time')
    'time/main/predictor/backward/self'
    >>> figure_key('eval', 'main', 'elapsed_time')
    'validation/time/main'
    >>> figure_key('train', '(outside)', 'backward_flops')
    'flops/(outside)/backward'
    """
    figure = _FIGURES[field]
    return prefix(mode, figure.family) + key + figure.suffix


def figures(report, backward, flops=False):
    """``{reported key: value}`` of a :class:`Report`."""
    mode = report.mode
    shown = function_figures(backward_reported(mode, backward), flops)
    return {**{figure_key(mode, e.key, f.field): getattr(e, f.field)
               for e in report.entries
               for f in reported(mode, e.key, backward, flops)},
            **{function_key(mode, t.function, f): getattr(t, f.field)
               for t in function_totals(report.functions) for f in shown}}


def spread_key(figure, statistic):
    """The key of a statistic of a figure over workers.

    >>> spread_key('time/main/self', 'slowest_rank')
    'time/main/self/slowest_rank'
    """
    return figure + '/' + statistic


def phase_figure(phase):
    """A loop phase's figure, after :data:`LOOP_PREFIX`.

    >>> phase_figure('data')
    'data'
    >>> phase_figure(phases.ExtensionPhase('LogReport'))
    'extension/LogReport'
    """
    if isinstance(phase, phases.ExtensionPhase):
        return EXTENSION_PREFIX + phase.name
    return phase


def loop_key(figure):
    """The key of a TimedLoop figure.

    >>> loop_key(phase_figure(phases.ExtensionPhase('LogReport')))
    'time/loop/extension/LogReport'
    """
    return LOOP_PREFIX + figure


def spread_keys(observation):
    """The keys of ``observation`` that are all :data:`STATISTICS` of a key.

    >>> sorted(spread_keys({'time/main': 1.0, 'time/main/max': 2.0}))
    []
    """
    found = set()
    for key in observation:
        owned = [spread_key(key, s) for s in STATISTICS]
        if all(k in observation for k in owned):
            found.update(owned)
    return found


def tail_figure(statistic):
    """The figure of a statistic of :data:`TAIL`.

    >>> tail_figure('p90')
    'iteration/p90'
    """
    return ITERATION + '/' + statistic


def slowest_figure(figure):
    """The figure of the slowest iteration's ``figure``.

    >>> slowest_figure(phase_figure(phases.ExtensionPhase('LogReport')))
    'slowest/extension/LogReport'
    """
    return SLOWEST + '/' + figure


_Owner = collections.namedtuple(
    '_Owner', ('key', 'name', 'figure', 'statistic'))


def check_link_names(call, names, backward, spread, memory=False,
                     functions=False):
    """Raises ``ValueError`` for link names that make two keys one
    (docs/timing.md, "Names refused"); ``functions``: a top link ``function``.

    >>> check_link_names('TimedLinks', ['main', 'main/max'], False, True)
    Traceback (most recent call last):
    ...
    ValueError: TimedLinks: the link 'main/max' would report `time/main/max`, \
the max over workers of the elapsed time of 'main'; rename the link or leave \
it out with `links=`.
    """
    owners = {}
    for name in names:
        if functions and name.split('/')[0] == FUNCTION:
            raise ValueError(
                f'{call}: the link {name!r} would report under '
                f'`time/{FUNCTION}/`, where the function types\' figures '
                'are (functions=True); rename the optimizer (its name in the '
                'updater) or leave the link out with `links=`.')
        for figure in (MEMORY_FIGURES if memory else link_figures(backward)):
            key = (memory_key(name, figure) if memory else
                   figure_key('train', name, figure.field))
            for s in (None,) + (STATISTICS if spread else ()):
                owner = _Owner(key if s is None else spread_key(key, s),
                               name, figure, s)
                other = owners.setdefault(owner.key, owner)
                if other.name != name:
                    raise _clash(call, owner, other)


def _clash(call, one, other):
    # The longer name is the one to rename (a child named like a suffix).
    if len(one.name) < len(other.name):
        one, other = other, one
    what = f"the {other.figure.field.replace('_', ' ')} of {other.name!r}"
    if other.statistic is not None:
        what = (f"the {other.statistic.replace('_', ' ')} over workers of "
                f'{what}')
    fixes = 'rename the link or leave it out with `links=`'
    if other.figure.backward:
        fixes = ('rename the link, leave it out with `links=` or pass '
                 '`backward=False`')
    return ValueError(
        f'{call}: the link {one.name!r} would report `{one.key}`, {what}; '
        f'{fixes}.')


def loop_figures(extension_names):
    """Every figure TimedLoop may report, in report order.

    >>> loop_figures(['LogReport'])[-4:]
    ('extensions', 'extension/LogReport', 'other', 'gc')
    """
    return ((ITERATION,) + phases.UPDATE_PHASES + (EXTENSIONS,) + tuple(
        phase_figure(phases.ExtensionPhase(name))
        for name in extension_names) + (phases.OTHER, GC))


def loop_tail_figures(extension_names):
    """Every figure of the tail TimedLoop may report.

    >>> loop_tail_figures([])[:5]
    ('iteration/max', 'iteration/p50', 'iteration/p90', 'slowest', \
'slowest/rank')
    """
    return tuple(tail_figure(s) for s in TAIL) + (
        SLOWEST, SLOWEST_RANK) + tuple(
        slowest_figure(f) for f in loop_figures(extension_names)
        if f != ITERATION)


def check_loop_keys(names, backward, spread, extension_names, loop_spread):
    """Raises ``ValueError`` for TimedLinks keys TimedLoop reports too.

    >>> check_loop_keys(['loop'], True, False, [], False)
    Traceback (most recent call last):
    ...
    ValueError: TimedLinks and TimedLoop would both report \
`time/loop/backward`: TimedLinks the backward time of the link 'loop', \
TimedLoop its figure 'backward'; rename the link (the keys of an \
optimizer's links start with its name in the updater), leave it out of \
TimedLinks with `links=` or pass TimedLinks `backward=False`.
    """
    loop = {k: f for f in loop_figures(extension_names)  # {key: figure}
            for k in _with_spreads(loop_key(f), loop_spread)}
    loop.update((loop_key(f), f) for f in loop_tail_figures(extension_names))
    for name in names:
        for figure in link_figures(backward):
            for one in _with_spreads(
                    figure_key('train', name, figure.field), spread):
                if one in loop:
                    raise _loop_clash(one, name, figure, loop[one])


def _with_spreads(key, spread):
    return [key] + [spread_key(key, s) for s in STATISTICS if spread]


def _loop_clash(key, name, figure, loop_figure):
    fixes = ['rename the link (the keys of an optimizer\'s links start with '
             'its name in the updater)', 'leave it out of TimedLinks with '
             '`links=`']
    if figure.backward:
        fixes.append('pass TimedLinks `backward=False`')
    return ValueError(
        f'TimedLinks and TimedLoop would both report `{key}`: TimedLinks the '
        f"{figure.field.replace('_', ' ')} of the link {name!r}, TimedLoop "
        f"its figure {loop_figure!r}; {', '.join(fixes[:-1])} or "
        f'{fixes[-1]}.')


def memory_peak_key(category=None):
    """The key of the memory peak, or of ``category``'s share of it.

    >>> memory_peak_key(), memory_peak_key('activations')
    ('memory/peak', 'memory/peak/activations')
    """
    key = MEMORY + '/peak'
    return key if category is None else f'{key}/{category}'

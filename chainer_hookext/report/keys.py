"""Every reported key of the package, and the figures behind them.

Each key is built here from named values (an :class:`~.records.Entry`
field, a loop figure, a memory figure); readers ask for keys here and no
key is parsed back.  The layout is in docs/timing.md, docs/flops.md and
docs/memory.md; docs/internals.md ("Adding a per-link figure") says how a
figure gets its key.  :func:`check_link_names` and :func:`check_loop_keys`
refuse, before training, names that would make two keys one.
"""

import collections

from chainer_hookext.timing import phases
from chainer_hookext.timing import records


#: The family of time figures: their keys start with ``time/``.
TIME = 'time'
#: The family of FLOP counts: their keys start with ``flops/``.
FLOPS = 'flops'
#: Before a family in evaluation-mode keys (per outermost evaluation call);
#: training-mode keys (per training iteration) start with the family.
EVAL_PREFIX = 'validation/'
#: The bucket of backward steps of nodes created outside every timed link.
OUTSIDE = records.OUTSIDE
#: Prefix of :class:`~chainer_hookext.TimedLoop`'s keys.
LOOP_PREFIX = 'time/loop/'
#: What :func:`phase_figure` puts before an extension's name.
EXTENSION_PREFIX = 'extension/'
#: TimedLoop's figure of a whole iteration.
ITERATION = 'iteration'
#: TimedLoop's figure of all extensions' triggers and calls.
EXTENSIONS = 'extensions'
#: TimedLoop's figure of the garbage collector's time (inside the phases).
GC = 'gc'
#: TimedLoop's statistics of an interval's iteration times, after
#: ``iteration/``: :func:`tail_figure`.
TAIL = ('max', 'p50', 'p90')
#: TimedLoop's figure of the slowest iteration's number; its phases below
#: it (:func:`slowest_figure`).
SLOWEST = 'slowest'
#: The figure of the worker that ran the slowest iteration (ChainerMN).
SLOWEST_RANK = SLOWEST + '/rank'

#: A reported figure of a link.  ``field``: its :class:`~.records.Entry`
#: field; ``suffix``: after the link's name in its key; ``backward``:
#: reported only when backward is timed (training mode); ``outside``:
#: reported for :data:`OUTSIDE` too; ``title`` and ``mean_title``: its
#: column in a table of one process and of figures over workers;
#: ``family``: :data:`TIME`, or :data:`FLOPS` (reported with ``flops=True``).
Figure = collections.namedtuple('Figure', (
    'field', 'suffix', 'backward', 'outside', 'title', 'mean_title',
    'family'))

#: The reported figures of a link, in table order; the first has the
#: spread's own columns in a table over workers.
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

#: What comes after the family in the keys of function types' figures.
FUNCTION = 'function'

#: A reported figure of a function type: ``field`` of
#: :class:`~.records.FunctionEntry`, ``suffix`` after the type's name,
#: ``backward`` (reported when backward is timed), ``title`` in a table,
#: ``family`` as in :class:`Figure`.
FunctionFigure = collections.namedtuple('FunctionFigure', (
    'field', 'suffix', 'backward', 'title', 'family'))

#: The reported figures of a function type, in table order.
FUNCTION_FIGURES = (
    FunctionFigure('time', '', False, 'Time', TIME),
    FunctionFigure('backward_time', '/backward', True, 'BackwardTime', TIME),
    FunctionFigure('flops', '', False, 'FLOPs', FLOPS),
    FunctionFigure('backward_flops', '/backward', True, 'BackwardFLOPs',
                   FLOPS),
)


def function_figures(backward, flops=False):
    """Returns the :data:`FUNCTION_FIGURES` reported (see
    :func:`link_figures`)."""
    return tuple(f for f in FUNCTION_FIGURES if (
        backward or not f.backward) and (flops or f.family == TIME))


def function_key(mode, function, figure):
    """Returns the reported key of a function type's figure.

    >>> function_key('train', 'LinearFunction', FUNCTION_FIGURES[1])
    'time/function/LinearFunction/backward'
    >>> function_key('eval', 'ReLU', FUNCTION_FIGURES[2])
    'validation/flops/function/ReLU'
    """
    return prefix(mode, figure.family) + FUNCTION + '/' + function + (
        figure.suffix)


def function_totals(rows):
    """Returns one :class:`~.records.FunctionEntry` per function type, the
    sum of its rows over the links (``link`` is ``None``).

    >>> from chainer_hookext.timing.records import FunctionEntry
    >>> rows = function_totals([FunctionEntry('a', 'ReLU', 1.0, 2.0, 1),
    ...                         FunctionEntry('b', 'ReLU', 0.5, 0.5, 2)])
    >>> rows[0].time, rows[0].backward_time, rows[0].occurrence
    (1.5, 2.5, 3)
    """
    sums = collections.OrderedDict()
    for row in rows:
        mine = sums.get(row.function)
        sums[row.function] = row._replace(link=None) if mine is None else (
            mine._replace(**{f: getattr(mine, f) + getattr(row, f)
                             for f in records.FUNCTION_FIELDS}))
    return list(sums.values())


#: The family of memory figures (:class:`~chainer_hookext.LinkMemory`):
#: their keys start with ``memory/``.
MEMORY = 'memory'

#: A reported memory figure of a link: ``field`` of
#: :class:`~chainer_hookext.memory.figures.LinkFigures`, ``suffix`` after
#: the link's name, ``outside`` (reported for :data:`OUTSIDE` too),
#: ``gpu`` (measured on a GPU only), ``title`` in a table; ``backward`` is
#: false (the collision check's).
MemoryFigure = collections.namedtuple('MemoryFigure', (
    'field', 'suffix', 'outside', 'gpu', 'title', 'backward'))

#: The reported memory figures of a link, in table order::
#:
#:     memory/main/predictor/l1/activations       kept for backward, inclusive
#:     memory/main/predictor/l1/activations/self  by its own nodes
#:     memory/main/predictor/l1/forgettable       what F.forget would free
#:     memory/main/predictor/l1/params            parameters, inclusive
#:     memory/main/predictor/l1/grads             their gradients
#:     memory/main/predictor/l1/optimizer_state   the update rules' state
#:     memory/main/predictor/l1/peak              GPU: forward transient
#:     memory/main/predictor/l1/backward/peak     GPU: backward transient
#:     memory/(outside)/activations               nodes made outside links
MEMORY_FIGURES = (
    MemoryFigure('activations', '/activations', True, False, 'Activations',
                 False),
    MemoryFigure('self_activations', '/activations/self', False, False,
                 'SelfActivations', False),
    MemoryFigure('forgettable', '/forgettable', False, False, 'Forgettable',
                 False),
    MemoryFigure('params', '/params', False, False, 'Params', False),
    MemoryFigure('grads', '/grads', False, False, 'Grads', False),
    MemoryFigure('optimizer_state', '/optimizer_state', False, False,
                 'OptimizerState', False),
    MemoryFigure('peak', '/peak', False, True, 'Peak', False),
    MemoryFigure('backward_peak', '/backward/peak', True, True,
                 'BackwardPeak', False),
)


def memory_figures(key, gpu):
    """Returns the :data:`MEMORY_FIGURES` reported for the row ``key``.

    Args:
        key (str): A link name, or :data:`OUTSIDE`.
        gpu (bool): Whether the model ran on a GPU (the peaks).
    """
    return tuple(f for f in MEMORY_FIGURES if (gpu or not f.gpu) and (
        f.outside or key != OUTSIDE))


def memory_key(key, figure):
    """Returns the reported key of a memory figure of the row ``key``.

    >>> memory_key('main/predictor', MEMORY_FIGURES[1])
    'memory/main/predictor/activations/self'
    """
    return MEMORY + '/' + key + figure.suffix


def activation_key(name, output, statistic):
    """Returns the key of a statistic of a link's output
    (:class:`~chainer_hookext.ActivationStatistics`).

    Args:
        name (str): The link's name, ``main/predictor/l1``.
        output (tuple): Where the array is in the link's output (``()``:
            the output itself; ``(0,)``: its first element).
        statistic (str): ``mean``, ``std`` ...

    >>> activation_key('main/predictor/l1', (), 'mean')
    'main/predictor/l1/out/mean'
    >>> activation_key('main/lstm', (1, 'h'), 'max')
    'main/lstm/out/1/h/max'
    """
    return _output_key(name, 'out', output, statistic)


def gradient_key(name, output, statistic):
    """Returns the key of a statistic of the gradient w.r.t. a link's output
    (:class:`~chainer_hookext.GradientStatistics`).

    The layout of :func:`activation_key` under ``grad`` in place of
    ``out``.  It never is :func:`non_finite_key`'s ``<name>/grad/non_finite``
    (NonFiniteGuard's), since no statistic is called ``non_finite`` and an
    output's position comes before the statistic.

    Args:
        name (str): The link's name, ``main/predictor/l1``.
        output (tuple): Where the array is in the link's output (``()``:
            the output itself; ``(0,)``: its first element).
        statistic (str): ``mean``, ``norm`` ...

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
    # ``<name>/<what>/<where in the output>/<statistic>``.
    return '/'.join([name, what] + [str(k) for k in output] + [statistic])


def non_finite_key(link, what):
    """Returns the key of the count of non-finite values
    (:class:`~chainer_hookext.NonFiniteGuard`) in ``what`` of a link.

    >>> non_finite_key('main/predictor/l1', 'grad')
    'main/predictor/l1/grad/non_finite'
    """
    return '{}/{}/non_finite'.format(link, what)


#: The statistics of a figure over ChainerMN workers, each reported under
#: ``<figure's key>/<statistic>`` (the mean under the figure's key).
STATISTICS = ('min', 'max', 'slowest_rank')

#: One mode's figures at one report: ``entries`` (:class:`~.records.Entry`)
#: are seconds per training iteration (``mode='train'``) or per outermost
#: call of the model (``'eval'``), averaged over ``per`` of them;
#: ``functions`` (:class:`~.records.FunctionEntry`, with
#: ``functions=True``) likewise, per link and function type.
Report = collections.namedtuple(
    'Report', ('mode', 'per', 'entries', 'functions'), defaults=((),))


def prefix(mode, family=TIME):
    """Returns the key prefix of a family's figures in ``mode``.

    >>> prefix('eval', FLOPS)
    'validation/flops/'
    """
    return (family + '/') if mode == 'train' else (
        EVAL_PREFIX + family + '/')


def backward_reported(mode, backward):
    """Returns whether backward figures are reported in ``mode``.

    Args:
        mode (str): ``'train'`` or ``'eval'``: evaluation has no backward.
        backward (bool): Whether backward is timed.
    """
    return backward and mode == 'train'


def link_figures(backward, flops=False):
    """Returns the :data:`FIGURES` of a link.

    Args:
        backward (bool): With the backward ones.
        flops (bool): With the :data:`FLOPS` family.
    """
    return tuple(f for f in FIGURES if (backward or not f.backward) and (
        flops or f.family == TIME))


def reported(mode, key, backward, flops=False):
    """Returns the :class:`Figure` s reported for the entry ``key``.

    Args:
        mode (str): ``'train'`` or ``'eval'``.
        key (str): A link name, or :data:`OUTSIDE`.
        backward (bool): Whether backward is timed.
        flops (bool): Whether FLOPs are counted.
    """
    if key == OUTSIDE:
        return tuple(f for f in link_figures(True, flops) if f.outside)
    return link_figures(backward_reported(mode, backward), flops)


def figure_key(mode, key, field):
    """Returns the reported key of one field of one entry.

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
    """Returns ``{reported key: value}`` of a :class:`Report`.

    Args:
        report (Report): The rows of one mode.
        backward (bool): Whether backward is timed.
        flops (bool): Whether FLOPs are counted.
    """
    out = {}
    for entry in report.entries:
        for figure in reported(report.mode, entry.key, backward, flops):
            out[figure_key(report.mode, entry.key, figure.field)] = getattr(
                entry, figure.field)
    shown = function_figures(backward_reported(report.mode, backward), flops)
    for total in function_totals(report.functions):
        for figure in shown:
            out[function_key(report.mode, total.function, figure)] = getattr(
                total, figure.field)
    return out


def spread_key(figure, statistic):
    """Returns the key of a statistic of a figure over workers.

    >>> spread_key('time/main/self', 'slowest_rank')
    'time/main/self/slowest_rank'
    """
    return figure + '/' + statistic


def phase_figure(phase):
    """Returns the name of a loop phase's figure, after :data:`LOOP_PREFIX`.

    >>> phase_figure('data')
    'data'
    >>> phase_figure(phases.ExtensionPhase('LogReport'))
    'extension/LogReport'
    """
    if isinstance(phase, phases.ExtensionPhase):
        return EXTENSION_PREFIX + phase.name
    return phase


def loop_key(figure):
    """Returns the reported key of a :class:`~chainer_hookext.TimedLoop`
    figure (:func:`loop_figures`, :func:`loop_tail_figures`).

    >>> loop_key(phase_figure(phases.ExtensionPhase('LogReport')))
    'time/loop/extension/LogReport'
    """
    return LOOP_PREFIX + figure


def spread_keys(observation):
    """Returns the keys of ``observation`` that are spreads over workers:
    those of a figure whose every :data:`STATISTICS` key is there, as a
    gather reports them (a link named ``max`` alone is a figure).

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
    """Returns the figure of a statistic of :data:`TAIL`.

    >>> tail_figure('p90')
    'iteration/p90'
    """
    return ITERATION + '/' + statistic


def slowest_figure(figure):
    """Returns the figure of the slowest iteration's ``figure``.

    >>> slowest_figure(phase_figure(phases.ExtensionPhase('LogReport')))
    'slowest/extension/LogReport'
    """
    return SLOWEST + '/' + figure


#: Who reports a key: the link ``name``'s ``figure`` (or its ``statistic``
#: over workers).
_Owner = collections.namedtuple(
    '_Owner', ('key', 'name', 'figure', 'statistic'))


def check_link_names(call, names, backward, spread, memory=False,
                     functions=False):
    """Refuses link names that would make two reported keys one.

    A link named ``self`` would have the key of its parent's self time;
    ``backward`` (with backward timing) its parent's backward time;
    ``min``, ``max`` or ``slowest_rank`` (gathered over workers) its
    parent's spread; with ``functions``, a link named ``function`` at the
    top (an optimizer's name) the keys of the function types.

    Args:
        call (str): The class to name in the error.
        names (iterable of str): Names of the links in scope.
        backward (bool): Backward is timed.
        spread (bool): Figures are gathered over ChainerMN workers.
        memory (bool): Check :data:`MEMORY_FIGURES` instead (a link named
            ``backward`` would report its parent's backward peak).
        functions (bool): Function types' figures are reported.

    Raises:
        ValueError: Naming the link, its key, and what to do.

    >>> check_link_names('TimedLinks', ['main', 'main/max'], False, True)
    Traceback (most recent call last):
    ...
    ValueError: TimedLinks: the link 'main/max' would report `time/main/max`, \
the max over workers of the elapsed time of 'main'; rename the link or leave \
it out with `links=`.
    """
    owners = {}  # {key: _Owner}
    for name in names:
        if functions and name.split('/')[0] == FUNCTION:
            raise ValueError(
                '{}: the link {!r} would report under `time/{}/`, where '
                'the function types\' figures are (functions=True); rename '
                'the optimizer (its name in the updater) or leave the link '
                'out with `links=`.'.format(call, name, FUNCTION))
        for figure in (MEMORY_FIGURES if memory else link_figures(backward)):
            key = (memory_key(name, figure) if memory else
                   figure_key('train', name, figure.field))
            owned = [_Owner(key, name, figure, None)]
            if spread:
                owned += [_Owner(spread_key(key, s), name, figure, s)
                          for s in STATISTICS]
            for owner in owned:
                other = owners.setdefault(owner.key, owner)
                if other.name != name:
                    raise _clash(call, owner, other)


def _clash(call, one, other):
    # The longer name is the one to rename (a child named like a suffix).
    if len(one.name) < len(other.name):
        one, other = other, one
    what = 'the {} of {!r}'.format(
        other.figure.field.replace('_', ' '), other.name)
    if other.statistic is not None:
        what = 'the {} over workers of {}'.format(
            other.statistic.replace('_', ' '), what)
    fixes = 'rename the link or leave it out with `links=`'
    if other.figure.backward:
        fixes = ('rename the link, leave it out with `links=` or pass '
                 '`backward=False`')
    return ValueError('{}: the link {!r} would report `{}`, {}; {}.'.format(
        call, one.name, one.key, what, fixes))


def loop_figures(extension_names):
    """Returns every figure :class:`~chainer_hookext.TimedLoop` may report,
    after :data:`LOOP_PREFIX`, in report order.

    Args:
        extension_names (iterable of str): The trainer's extensions' names.

    >>> loop_figures(['LogReport'])[-4:]
    ('extensions', 'extension/LogReport', 'other', 'gc')
    """
    return ((ITERATION,) + phases.UPDATE_PHASES + (EXTENSIONS,) + tuple(
        phase_figure(phases.ExtensionPhase(name))
        for name in extension_names) + (phases.OTHER, GC))


def loop_tail_figures(extension_names):
    """Returns every figure of the tail :class:`~chainer_hookext.TimedLoop`
    may report, after :data:`LOOP_PREFIX`.

    >>> loop_tail_figures([])[:5]
    ('iteration/max', 'iteration/p50', 'iteration/p90', 'slowest', \
'slowest/rank')
    """
    return tuple(tail_figure(s) for s in TAIL) + (
        SLOWEST, SLOWEST_RANK) + tuple(
        slowest_figure(f) for f in loop_figures(extension_names)[1:])


def check_loop_keys(names, backward, spread, extension_names, loop_spread):
    """Refuses ``TimedLinks`` keys that ``TimedLoop`` reports too.

    The keys of the links of an optimizer named ``loop`` start with
    ``time/loop/``, as ``TimedLoop``'s do: ``time/loop/backward`` would be
    both the backward time of the link ``loop`` and the backward phase.

    Args:
        names (iterable of str): Names of the links ``TimedLinks`` times.
        backward (bool): ``TimedLinks`` times backward.
        spread (bool): ``TimedLinks`` gathers over ChainerMN workers.
        extension_names (iterable of str): The trainer's extensions' names
            (``TimedLoop`` reports ``time/loop/extension/<name>``).
        loop_spread (bool): ``TimedLoop`` gathers over ChainerMN workers.

    Raises:
        ValueError: Naming both extensions, the key, and what to do.

    >>> check_loop_keys(['loop'], True, False, [], False)
    Traceback (most recent call last):
    ...
    ValueError: TimedLinks and TimedLoop would both report \
`time/loop/backward`: TimedLinks the backward time of the link 'loop', \
TimedLoop its figure 'backward'; rename the link (the keys of an \
optimizer's links start with its name in the updater), leave it out of \
TimedLinks with `links=` or pass TimedLinks `backward=False`.
    """
    loop = {}  # {key: TimedLoop's figure}
    for figure in loop_figures(extension_names):
        key = loop_key(figure)
        loop[key] = figure
        if loop_spread:
            loop.update((spread_key(key, s), figure) for s in STATISTICS)
    loop.update((loop_key(f), f) for f in loop_tail_figures(
        extension_names))
    for name in names:
        for figure in link_figures(backward):
            key = figure_key('train', name, figure.field)
            owned = [key]
            if spread:
                owned += [spread_key(key, s) for s in STATISTICS]
            for one in owned:
                if one in loop:
                    raise _loop_clash(one, name, figure, loop[one])


def _loop_clash(key, name, figure, loop_figure):
    fixes = ['rename the link (the keys of an optimizer\'s links start with '
             'its name in the updater)', 'leave it out of TimedLinks with '
             '`links=`']
    if figure.backward:
        fixes.append('pass TimedLinks `backward=False`')
    return ValueError(
        'TimedLinks and TimedLoop would both report `{}`: TimedLinks the {} '
        'of the link {!r}, TimedLoop its figure {!r}; {} or {}.'.format(
            key, figure.field.replace('_', ' '), name, loop_figure,
            ', '.join(fixes[:-1]), fixes[-1]))


def memory_peak_key(category=None):
    """Returns the key of a measured iteration's memory peak (bytes), or of
    ``category``'s share of it (``docs/memory.md``, "Memory over the
    iteration").

    >>> memory_peak_key(), memory_peak_key('activations')
    ('memory/peak', 'memory/peak/activations')
    """
    key = MEMORY + '/peak'
    return key if category is None else f'{key}/{category}'

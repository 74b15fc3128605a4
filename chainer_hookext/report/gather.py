"""Figures of every ChainerMN worker, summarised on rank 0.

Under ChainerMN each worker (MPI process) times its own links; the question
becomes which link is slow, and on which worker.  :func:`gather` sends each
worker's :class:`~.keys.Report` s to rank 0 through the communicator's own
``gather_obj``, and summarises each reported figure of each
:class:`~.records.Entry` over the workers that have the entry: a
:class:`Spread` (mean, min, max, the slowest rank).  :func:`figures` spells
the reported keys with :mod:`~chainer_hookext.report.keys`: the mean under
the figure's own key, so ``LogReport`` and ``PlotReport`` keep working, and
the spread below it (``time/main/max`` ...).

:func:`gather` is a collective: every worker calls it at the same
iteration, and nothing between two calls may raise on one worker only
(:class:`~chainer_hookext.TimedLinks` checks every name in ``initialize``).
"""

import collections

from chainer_hookext.report import keys
from chainer_hookext.timing import records


#: A figure over the workers that reported it: its mean, and each of
#: :data:`.keys.STATISTICS`.
Spread = collections.namedtuple('Spread', ('mean',) + keys.STATISTICS)
#: One entry gathered over workers: ``spreads`` is ``{field: Spread}``.
GatheredEntry = collections.namedtuple(
    'GatheredEntry', ('key', 'parent', 'spreads'))
#: One mode's :class:`~.keys.Report` gathered over ``workers`` processes:
#: ``entries`` are :class:`GatheredEntry` s; ``functions`` too, one per
#: function type (its ``key``), of each worker's sum over its links.
Gathered = collections.namedtuple(
    'Gathered', ('mode', 'workers', 'entries', 'functions'), defaults=((),))


def check_comm(call, comm):
    """Raises ``TypeError`` naming ``call`` unless ``comm`` looks usable.

    >>> check_comm('TimedLinks', 'naive')
    Traceback (most recent call last):
    ...
    TypeError: `TimedLinks(comm='naive')` is not a ChainerMN communicator: \
pass chainermn.create_communicator(...), or None for one process.
    """
    if not all(hasattr(comm, a) for a in ('rank', 'size', 'gather_obj')):
        raise TypeError(
            '`{}(comm={!r})` is not a ChainerMN communicator: pass '
            'chainermn.create_communicator(...), or None for one '
            'process.'.format(call, comm))


def gather(comm, reports, backward, root=0, flops=False, functions=False):
    """Gathers every worker's reports and summarises them on ``root``.

    Args:
        comm (chainermn.CommunicatorBase): The workers' communicator.
        reports (list of ~.keys.Report): This worker's, one per mode.
        backward (bool): Backward is timed (which figures are reported).
        root (int): Rank that receives the summary.
        flops (bool): FLOPs are counted (reported too).
        functions (bool): Function types' figures are reported.

    Returns:
        list of Gathered: On ``root``, one per report of ``root``;
        elsewhere ``None``.
    """
    per_rank = comm.gather_obj(list(reports), root=root)
    if comm.rank != root:
        return None
    gathered = []
    for report in reports:
        mode = report.mode
        rows = [[e for r in sent if r.mode == mode for e in r.entries]
                for sent in per_rank]
        types = []
        if functions:
            shown = [f.field for f in keys.function_figures(
                keys.backward_reported(mode, backward), flops)]
            types = summarise([_type_totals(
                [f for r in sent if r.mode == mode for f in r.functions])
                for sent in per_rank], lambda row: shown)
        gathered.append(Gathered(mode, len(per_rank), summarise(
            rows, _reported_fields(mode, backward, flops)), types))
    return gathered


#: A function type's total over one worker's links, as :func:`summarise`
#: reads rows: ``key`` is the type's name.
_TypeTotal = collections.namedtuple(
    '_TypeTotal', ('key', 'parent') + records.FUNCTION_FIELDS)


def _type_totals(rows):
    return [_TypeTotal(total.function, None, *total[2:])
            for total in keys.function_totals(rows)]


def _reported_fields(mode, backward, flops):
    def fields(entry):
        return [f.field for f in keys.reported(
            mode, entry.key, backward, flops)]
    return fields


def summarise(per_rank, fields):
    """Summarises rows per key over ranks.

    Args:
        per_rank (list): ``per_rank[r]`` is rank ``r``'s list of rows
            (objects with ``key``, ``parent`` and the fields, e.g.
            :class:`~.records.Entry`); a key missing on a rank (a link never
            called there) is summarised over the others.
        fields: ``fields(row)`` gives the fields to summarise.

    Returns:
        list of GatheredEntry: In first-seen order.

    >>> Row = collections.namedtuple('Row', ('key', 'parent', 'seconds'))
    >>> rows = summarise([[Row('main', None, 0.25)],
    ...                   [Row('main', None, 0.75)]], lambda row: ['seconds'])
    >>> rows[0].spreads['seconds']
    Spread(mean=0.5, min=0.25, max=0.75, slowest_rank=1)
    """
    parents = collections.OrderedDict()
    for rows in per_rank:
        for row in rows:
            parents.setdefault(row.key, row.parent)
    by_key = [{row.key: row for row in rows} for rows in per_rank]
    out = []
    for key, parent in parents.items():
        values = [{f: getattr(rows[key], f) for f in fields(rows[key])}
                  if key in rows else {} for rows in by_key]
        out.append(GatheredEntry(key, parent, spreads(values)))
    return out


def spreads(per_rank):
    """Returns ``{name: Spread}`` of the ranks' ``{name: value}``.

    Each name over the ranks that have it, in first-seen order; the slowest
    rank is the lowest of those with the largest value.

    >>> spreads([{'data': 1.0}, {'data': 3.0}, {'data': 3.0}])['data']
    Spread(mean=2.3333333333333335, min=1.0, max=3.0, slowest_rank=1)
    """
    found = collections.OrderedDict()  # {name: {rank: value}}
    for rank, values in enumerate(per_rank):
        for name, value in values.items():
            found.setdefault(name, {})[rank] = value
    out = collections.OrderedDict()
    for name, by_rank in found.items():
        slowest = max(by_rank, key=lambda rank: (by_rank[rank], -rank))
        out[name] = Spread(
            mean=sum(by_rank.values()) / len(by_rank),
            min=min(by_rank.values()), max=by_rank[slowest],
            slowest_rank=slowest)
    return out


def spread_figures(key, spread):
    """Returns ``{reported key: value}`` of a :class:`Spread`: the mean under
    ``key``, each statistic below it.

    >>> sorted(spread_figures('time/loop/data', Spread(2.0, 1.0, 3.0, 1)))
    ['time/loop/data', 'time/loop/data/max', 'time/loop/data/min', \
'time/loop/data/slowest_rank']
    """
    out = {key: spread.mean}
    for statistic in keys.STATISTICS:
        out[keys.spread_key(key, statistic)] = getattr(spread, statistic)
    return out


def figures(gathered):
    """Returns ``{reported key: value}`` of a :class:`Gathered`."""
    out = {}
    for entry in gathered.entries:
        for field, spread in entry.spreads.items():
            out.update(spread_figures(
                keys.figure_key(gathered.mode, entry.key, field), spread))
    figures = {f.field: f for f in keys.FUNCTION_FIGURES}
    for entry in gathered.functions:
        for field, spread in entry.spreads.items():
            out.update(spread_figures(keys.function_key(
                gathered.mode, entry.key, figures[field]), spread))
    return out


def slowest_worker(tails):
    """Returns the tail of ``TimedLoop`` over workers: the slowest
    iteration of any worker (the lowest rank of equals) with its figures
    and :data:`~.keys.SLOWEST_RANK`, the percentiles' means over the
    workers that have a tail.

    Args:
        tails (list of dict): ``tails[r]``, rank ``r``'s ``{figure:
            value}`` (``{}`` without one).

    >>> slowest_worker([{'iteration/max': 2.0, 'iteration/p50': 1.0,
    ...                  'iteration/p90': 2.0, 'slowest': 7},
    ...                 {'iteration/max': 3.0, 'iteration/p50': 2.0,
    ...                  'iteration/p90': 3.0, 'slowest': 5}])['slowest']
    5
    """
    per_figure = spreads(tails)
    if not per_figure:
        return collections.OrderedDict()
    slowest = per_figure[keys.tail_figure('max')].slowest_rank
    tail = collections.OrderedDict(tails[slowest])
    for statistic in keys.TAIL[1:]:
        figure = keys.tail_figure(statistic)
        tail[figure] = per_figure[figure].mean
    tail[keys.SLOWEST_RANK] = slowest
    return tail

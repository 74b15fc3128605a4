"""Figures of every ChainerMN worker, summarised on rank 0 (docs/chainermn.md).

Every worker calls :func:`collect`, the one gather, at the same iteration:
nothing between two calls may raise on one worker only.
"""

import collections

from chainer_hookext.report import keys
from chainer_hookext.timing import records


#: A figure over the workers that reported it.
Spread = collections.namedtuple('Spread', ('mean',) + keys.STATISTICS)
#: ``spreads``: ``{field: Spread}``.
GatheredEntry = collections.namedtuple(
    'GatheredEntry', ('key', 'parent', 'spreads'))
#: One mode's :class:`~.keys.Report` over ``workers``: GatheredEntry s
#: (``functions``: one per type, each worker's sum).
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
            f'`{call}(comm={comm!r})` is not a ChainerMN communicator: pass '
            'chainermn.create_communicator(...), or None for one process.')


def collect(comm, sent):
    """Every worker's ``sent`` in rank order on rank 0, else ``None``."""
    return comm.gather_obj(sent)


def gather(comm, reports, backward, flops=False, functions=False):
    """On rank 0 a :class:`Gathered` per report of its, elsewhere ``None``."""
    per_rank = collect(comm, list(reports))
    if per_rank is None:
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
            rows, lambda entry: [f.field for f in keys.reported(
                mode, entry.key, backward, flops)]), types))
    return gathered


_TypeTotal = collections.namedtuple(
    '_TypeTotal', ('key', 'parent') + records.FUNCTION_FIELDS)


def _type_totals(rows):
    return [_TypeTotal(key=total.function, parent=None, **{
        f: getattr(total, f) for f in records.FUNCTION_FIELDS})
        for total in keys.function_totals(rows)]


def summarise(per_rank, fields):
    """:class:`GatheredEntry` s of the ranks' rows, in first-seen order, over
    the ranks that have the key; ``fields(row)`` names the fields.

    >>> Row = collections.namedtuple('Row', ('key', 'parent', 'seconds'))
    >>> rows = summarise([[Row('main', None, 0.25)],
    ...                   [Row('main', None, 0.75)]], lambda row: ['seconds'])
    >>> rows[0].spreads['seconds']
    Spread(mean=0.5, min=0.25, max=0.75, slowest_rank=1)
    """
    parents = {}
    for rows in per_rank:
        for row in rows:
            parents.setdefault(row.key, row.parent)
    by_key = [{row.key: row for row in rows} for rows in per_rank]
    return [GatheredEntry(key, parent, spreads([
        {f: getattr(rows[key], f) for f in fields(rows[key])}
        if key in rows else {} for rows in by_key]))
        for key, parent in parents.items()]


def spreads(per_rank):
    """``{name: Spread}`` of the ranks' ``{name: value}``; the slowest rank:
    the lowest with the largest value.

    >>> spreads([{'data': 1.0}, {'data': 3.0}, {'data': 3.0}])['data']
    Spread(mean=2.3333333333333335, min=1.0, max=3.0, slowest_rank=1)
    """
    found = {}  # {name: {rank: value}}
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
    """``{key: value}`` of a :class:`Spread`: the mean, each statistic.

    >>> sorted(spread_figures('time/loop/data', Spread(2.0, 1.0, 3.0, 1)))
    ['time/loop/data', 'time/loop/data/max', 'time/loop/data/min', \
'time/loop/data/slowest_rank']
    """
    return {key: spread.mean, **{keys.spread_key(key, s): getattr(spread, s)
                                 for s in keys.STATISTICS}}


def spread_observation(per_rank, key=None):
    """:func:`spread_figures` of the ranks' ``{name: value}``, under
    ``key(name)`` (by default the name).

    >>> spread_observation([{'memory/main/params': 4}, {}])
    ... # doctest: +NORMALIZE_WHITESPACE
    {'memory/main/params': 4.0, 'memory/main/params/min': 4,
     'memory/main/params/max': 4, 'memory/main/params/slowest_rank': 0}
    """
    out = {}
    for name, spread in spreads(per_rank).items():
        out.update(spread_figures(name if key is None else key(name), spread))
    return out


def figures(gathered):
    """``{key: value}`` of a :class:`Gathered`."""
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
    """TimedLoop's tail over the ranks' ``{figure: value}`` (docs/timing.md,
    "The tail and the garbage collector").

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
    for statistic in keys.TAIL:
        if statistic != 'max':  # max: the slowest worker's own
            figure = keys.tail_figure(statistic)
            tail[figure] = per_figure[figure].mean
    tail[keys.SLOWEST_RANK] = slowest
    return tail

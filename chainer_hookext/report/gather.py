"""Per-link figures of every ChainerMN worker, summarised on rank 0.

Under ChainerMN each worker (MPI process) times its own links; the question
becomes which link is slow, and on which worker.  :func:`gather` sends each
worker's rows (``{mode: [Entry]}`` per report) to rank 0 through the
communicator's own ``gather_obj``, and summarises each reported field of
each row over the workers that have the row: a :class:`Spread` (mean, min,
max, the slowest rank).  :func:`figures` spells the reported keys with
:mod:`~chainer_hookext.report.keys`: the mean under the figure's
own key, so ``LogReport`` and ``PlotReport`` keep working, and the spread
below it (``time/main/max`` ...).

:func:`gather` is a collective: every worker calls it at the same
iteration, and nothing between two calls may raise on one worker only
(:class:`~chainer_hookext.TimedLinks` checks every name in ``initialize``).
"""

import collections

from chainer_hookext.report import keys


#: A figure over the workers that reported it.
Spread = collections.namedtuple(
    'Spread', ('mean', 'min', 'max', 'slowest_rank'))
#: One row gathered over workers: ``spreads`` is ``{field: Spread}``.
GatheredEntry = collections.namedtuple(
    'GatheredEntry', ('key', 'parent', 'spreads'))


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


def gather(comm, rows, backward, root=0):
    """Gathers every worker's rows and summarises them on ``root``.

    Args:
        comm (chainermn.CommunicatorBase): The workers' communicator.
        rows (dict): This worker's ``{mode: list of Entry}``.
        backward (bool): Backward is timed (which fields are reported).
        root (int): Rank that receives the summary.

    Returns:
        dict: On ``root``, ``{mode: list of GatheredEntry}``; elsewhere
        ``None``.
    """
    sent = {mode: [(e.key, e.parent, {
        f: getattr(e, f) for f in _fields(mode, e.key, backward)})
        for e in entries] for mode, entries in rows.items()}
    per_rank = comm.gather_obj(sent, root=root)
    if comm.rank != root:
        return None
    return {mode: summarise([r.get(mode, []) for r in per_rank])
            for mode in rows}


def summarise(per_rank):
    """Summarises rows per key over ranks.

    Args:
        per_rank (list): ``per_rank[r]`` is rank ``r``'s list of ``(key,
            parent, {field: seconds})``; a key missing on a rank (a link
            never called there) is summarised over the others.

    Returns:
        list of GatheredEntry: In first-seen order; the slowest rank is the
        lowest of those with the largest figure.

    >>> rows = summarise([[('main', None, {'elapsed_time': 0.25})],
    ...                   [('main', None, {'elapsed_time': 0.75})]])
    >>> rows[0].spreads['elapsed_time']
    Spread(mean=0.5, min=0.25, max=0.75, slowest_rank=1)
    """
    found = collections.OrderedDict()
    for rank, rows in enumerate(per_rank):
        for key, parent, values in rows:
            parents, fields = found.setdefault(key, ([], {}))
            parents.append(parent)
            for field, value in values.items():
                fields.setdefault(field, []).append((value, rank))
    out = []
    for key, (parents, fields) in found.items():
        spreads = collections.OrderedDict()
        for field, ranked in fields.items():
            slowest, slowest_rank = max(ranked, key=lambda vr: (vr[0], -vr[1]))
            spreads[field] = Spread(
                sum(v for v, _ in ranked) / len(ranked),
                min(v for v, _ in ranked), slowest, slowest_rank)
        out.append(GatheredEntry(key, parents[0], spreads))
    return out


def figures(mode, row):
    """Returns ``{reported key: value}`` of one :class:`GatheredEntry`."""
    out = {}
    for field, spread in row.spreads.items():
        figure = keys.figure_key(mode, row.key, field)
        out[figure] = spread.mean
        for statistic in keys.SPREAD_SUFFIXES:
            out[keys.spread_key(figure, statistic)] = getattr(
                spread, statistic)
    return out


def _fields(mode, key, backward):
    return keys.reported_fields(key, backward and mode == 'train')

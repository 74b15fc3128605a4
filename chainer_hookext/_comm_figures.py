"""Per-link figures of every ChainerMN worker, summarised on one rank.

Under ChainerMN each worker (MPI process) times its own links.  The question
becomes which link is slow, and on which worker.  :func:`gather` sends each
worker's ``{key: seconds}`` to the root through the communicator's own
``gather_obj`` (no transport of our own) and :func:`aggregate` turns them,
per key, into the mean over the workers that reported the key (under the key
itself, so ``LogReport`` and ``PlotReport`` keep working), and the spread
under keys below it::

    time/main/predictor/l1                 mean over workers
    time/main/predictor/l1/max             slowest worker's figure
    time/main/predictor/l1/min             fastest worker's figure
    time/main/predictor/l1/slowest_rank    rank of the slowest worker

Every worker must call :func:`gather` at the same iteration (a trigger in
iterations, or in epochs over datasets of equal length per worker as
``chainermn.scatter_dataset`` makes them), or the collective waits forever.
:func:`print_table` prints the summary as an indented tree.
"""

import numbers
import sys

import chainer

from chainer_hookext import _timing_table
from chainer_hookext import _units


#: Suffixes added below each key, in the order :func:`aggregate` adds them.
SUFFIXES = ('/max', '/min', '/slowest_rank')


def check_comm(call, comm):
    """Raises ``TypeError`` naming ``call`` unless ``comm`` looks usable.

    Any ChainerMN communicator (``chainermn.create_communicator(...)``)
    passes: it needs ``rank``, ``size`` and ``gather_obj``.

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


def gather(comm, figures, root=0):
    """Gathers every worker's figures and summarises them on ``root``.

    A collective: every rank of ``comm`` must call it at the same point.

    Args:
        comm (chainermn.CommunicatorBase): The workers' communicator.
        figures (dict): This worker's ``{key: seconds}``.
        root (int): Rank that receives the summary.

    Returns:
        dict: On ``root``, :func:`aggregate` of the gathered figures; on
        every other rank, ``None``.
    """
    per_rank = comm.gather_obj(_as_floats('gather', figures), root=root)
    if comm.rank != root:
        return None
    return aggregate(per_rank)


def aggregate(per_rank):
    """Summarises per-worker figures per key.

    Args:
        per_rank (list of dict): ``per_rank[r]`` is rank ``r``'s
            ``{key: seconds}``.  A key may be missing on some ranks (a link
            never called there): its figures are over the ranks that have it.

    Returns:
        dict: For each key ``k`` in first-seen order: ``k`` (the mean),
        ``k + '/max'``, ``k + '/min'`` and ``k + '/slowest_rank'`` (the rank
        with the largest figure; the lowest such rank on ties).

    Raises:
        ValueError: When a summary key is also one of the figures' keys
            (a link named ``max``, ``min`` or ``slowest_rank``).

    >>> summary = aggregate([{'time/main': 0.25}, {'time/main': 0.75}])
    >>> for key, value in summary.items():
    ...     print(key, value)
    time/main 0.5
    time/main/max 0.75
    time/main/min 0.25
    time/main/slowest_rank 1
    """
    per_rank = [_as_floats('aggregate', figures) for figures in per_rank]
    keys = {}
    for figures in per_rank:
        keys.update(dict.fromkeys(figures))
    clash = [k + s for k in keys for s in SUFFIXES if k + s in keys]
    if clash:
        raise ValueError(
            'aggregate: the figures {!r} would be overwritten by the '
            'spread of the links above them; rename the links named max, '
            'min or slowest_rank.'.format(clash))
    out = {}
    for key in keys:
        ranks = [(figures[key], rank) for rank, figures
                 in enumerate(per_rank) if key in figures]
        slowest, slowest_rank = max(ranks, key=lambda vr: (vr[0], -vr[1]))
        out[key] = sum(v for v, _ in ranks) / len(ranks)
        out[key + '/max'] = slowest
        out[key + '/min'] = min(v for v, _ in ranks)
        out[key + '/slowest_rank'] = slowest_rank
    return out


def print_table(summary, prefix='time/', unit='auto', file=None,
                header='Link', backward=False):
    """Prints a summary of :func:`aggregate` as an indented link tree.

    One row per link key under ``prefix`` (``time/main``,
    ``time/main/predictor`` ...), shortened to its last part under its
    parent and indented by depth, in the summary's order, with the columns
    ``Mean``, ``Min``, ``Max``, ``SlowestRank`` and, when the summary has
    ``<key>/self`` figures, ``SelfMean``::

        Link             Mean      Min       Max  SlowestRank  SelfMean
        main         125.00us  90.00us  160.00us            1   10.00us
          predictor  115.00us  80.00us  150.00us            1   15.00us
            l1        50.00us  40.00us   60.00us            1   50.00us

    Args:
        summary (dict): What :func:`aggregate` returned.
        prefix (str): Prints the keys that start with it, without it.
        unit (str): ``'sec'``, ``'ms'``, ``'us'``, ``'ns'``, ``'auto'``
            (one unit for the table, chosen from its largest figure) or
            ``'auto_foreach'`` (a unit per figure), as in
            :meth:`chainer.link_hooks.TimerHook.print_report`.
        file: Where to print; ``sys.stdout`` by default.
        header (str): Title of the first column.
        backward (bool): The ``<key>/backward`` and ``<key>/backward/self``
            figures are backward times (``TimedLinks(backward=True)``):
            they fill the columns ``BackwardMean`` and ``BackwardSelfMean``
            of their link's row, and a backward figure without a link
            (``time/(outside)/backward``) gets a row of its own.
    """
    _units.check_unit('print_table', unit)
    file = sys.stdout if file is None else file
    keys = []
    for k in summary:
        if (not k.startswith(prefix) or k + '/slowest_rank' not in summary
                or k.endswith('/self')):
            continue
        if backward and k.endswith('/backward'):
            k = k[:-len('/backward')]
            if k in summary:  # a column of the link's row
                continue
        keys.append(k)
    has_self = any(k + '/self' in summary for k in keys)
    columns = ['/backward', '/backward/self'] if backward and any(
        k + '/backward' in summary for k in keys) else []
    fmt = _units.formatter(unit, [
        summary[k + s + '/max'] for k in keys for s in [''] + columns
        if k + s + '/max' in summary])
    rows = [[header, 'Mean', 'Min', 'Max', 'SlowestRank']
            + ['SelfMean'] * has_self
            + ['BackwardMean', 'BackwardSelfMean'][:len(columns)]]
    labels = _timing_table.tree_labels([k[len(prefix):] for k in keys])
    for label, key in zip(labels, keys):
        if key in summary:
            row = [label] + [fmt(summary[key + s])
                             for s in ('', '/min', '/max')]
            row.append(str(summary[key + '/slowest_rank']))
        else:  # backward only
            row = [label, '', '', '', '']
        for suffix in ['/self'] * has_self + columns:
            value = summary.get(key + suffix)
            row.append('' if value is None else fmt(value))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
        print('  '.join(cells).rstrip(), file=file)


def report_gathered(comm, figures, iteration, unit=None, file=None,
                    backward=False):
    """Gathers the figures; on rank 0 reports and prints their summary.

    A collective, as :func:`gather`: :class:`~chainer_hookext.TimedLinks`
    calls it at each trigger on every rank.

    Args:
        comm (chainermn.CommunicatorBase): The workers' communicator.
        figures (dict): This worker's ``{key: seconds}``.
        iteration (int): The iteration to name in the printed titles.
        unit (str): Prints the tables in this unit (see
            :func:`print_table`) on rank 0; ``None`` prints nothing.
        file: Where to print; ``sys.stdout`` by default.
        backward (bool): The figures have backward times (see
            :func:`print_table`).

    Returns:
        bool: ``True`` on rank 0, which reported the summary through
        :func:`chainer.report`; ``False`` on the other ranks, which reported
        nothing.
    """
    summary = gather(comm, figures)
    if summary is None:
        return False
    chainer.report(summary)
    if unit is not None:
        print_tables(summary, iteration, comm.size, unit, file, backward)
    return True


def print_tables(summary, iteration, workers, unit='auto', file=None,
                 backward=False):
    """Prints the training and validation tables of a gathered summary.

    Args:
        summary (dict): What :func:`aggregate` returned for
            ``time/...`` and ``validation/time/...`` figures.
        iteration (int): The iteration to name in the titles.
        workers (int): The number of workers to name in the titles.
        unit (str): As in :func:`print_table`.
        file: Where to print; ``sys.stdout`` by default.
        backward (bool): As in :func:`print_table`.
    """
    for prefix, what in (('time/', 'seconds per training iteration'),
                         ('validation/time/',
                          'seconds per evaluation call of the model')):
        if any(k.startswith(prefix) for k in summary):
            print('TimedLinks at iteration {}: {} over {} workers'.format(
                iteration, what, workers), file=file)
            print_table(summary, prefix, unit, file, header='LinkName',
                        backward=backward)


def _as_floats(call, figures):
    if not isinstance(figures, dict):
        raise TypeError(
            '`{}`: a worker sent {!r}; each worker sends a dict '
            '{{key: seconds}}.'.format(call, figures))
    for key, value in figures.items():
        if not isinstance(key, str) or not isinstance(value, numbers.Real):
            raise TypeError(
                '`{}`: figure {!r}: {!r} is not a str key with a real number '
                'of seconds.'.format(call, key, value))
    return {key: float(value) for key, value in figures.items()}

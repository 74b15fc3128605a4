"""Gathers made-up figures of each rank through the communicator.

argv: out.  Rank r reports ``time/main = r + 1`` seconds,
``time/main/l1 = 10 - r``, ``time/main/l1/self = 0.5`` and, on rank 1 only,
``time/main/only1``.  Gathers on root 0, then on root 1; each rank saves
what :func:`gather` returned to it and, on the root, the printed table.
"""

import io

import _common

from chainer_hookext import _comm_figures


def main():
    comm, out = _common.setup()
    figures = {'time/main': comm.rank + 1.0,
               'time/main/l1': 10.0 - comm.rank,
               'time/main/l1/self': 0.5}
    if comm.rank == 1:
        figures['time/main/only1'] = 2.0
    result = {}
    for root in (0, 1):
        summary = _comm_figures.gather(comm, figures, root=root)
        table = io.StringIO()
        if summary is not None:
            _comm_figures.print_table(summary, unit='sec', file=table)
        result[root] = {'summary': summary, 'table': table.getvalue()}
    _common.save(comm, out, result)


if __name__ == '__main__':
    main()

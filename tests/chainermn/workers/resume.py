"""Resume under ChainerMN: call counts of TimedLinks(comm=...) are exact.

argv: out mode delay.  ``mode`` is ``each`` (``multi_node_snapshot`` with one
replica set per rank: every rank saves and resumes its own state) or ``root``
(one replica set: rank 0 saves, every rank resumes rank 0's state).  Rank 1's
``l2`` takes ``delay`` seconds per call, everything else no time
(``_common.CLOCK``).

Runs 8 iterations (2 epochs) uninterrupted, then 4 iterations with a
snapshot and, resumed from it, up to iteration 8.  Saves for each run the
cumulative summary of TimedLinks, the iterations run, the snapshot files and,
on rank 0, the LogReport log.
"""

import json
import os
import sys

import _common

import chainermn
from chainer.training import extensions

import chainer_hookext


def run(comm, out, stop, mode, delay):
    trainer, _ = _common.make_trainer(
        comm, out, stop=(stop, 'iteration'), evaluator=False,
        delay=delay if comm.rank == 1 else 0.0)
    timed = chainer_hookext.TimedLinks(comm=comm)
    trainer.extend(timed, trigger=(1, 'epoch'))
    replica_sets = [[r] for r in range(comm.size)] if mode == 'each' else []
    # multi_node_snapshot runs at the default priority (100), not at the
    # snapshot's (-100): without priority=, it runs before LogReport and
    # the snapshot misses the log entry of its own iteration.
    snapshot = extensions.snapshot(autoload=True)
    trainer.extend(chainermn.extensions.multi_node_snapshot(
        comm, snapshot, replica_sets),
        trigger=(1, 'epoch'), priority=snapshot.priority)
    if comm.rank == 0:
        trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
    updates = []
    trainer.extend(lambda trainer: updates.append(trainer.updater.iteration),
                   trigger=(1, 'iteration'), name='updates')
    trainer.run()
    comm.allreduce_obj(0)  # a barrier: every rank has written its files
    log = None
    if comm.rank == 0:
        with open(os.path.join(out, 'log')) as f:
            log = [(e['iteration'], sorted(k for k in e if '/' in k))
                   for e in json.load(f)]
    return {'summary': timed.summary(by='path'), 'log': log,
            'updates': updates,
            'files': sorted(n for n in os.listdir(out)
                            if n.startswith('snapshot'))}


def main():
    comm, out = _common.setup()
    mode, delay = sys.argv[2], float(sys.argv[3])
    result = {'whole': run(comm, os.path.join(out, 'whole'), 8, mode, delay)}
    resumed = os.path.join(out, 'resumed')
    result['first'] = run(comm, resumed, 4, mode, delay)
    result['resumed'] = run(comm, resumed, 8, mode, delay)
    _common.save(comm, out, result)


if __name__ == '__main__':
    main()

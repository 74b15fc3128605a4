"""Timeline under ChainerMN: one file for all ranks, or one per rank.

argv: out delay use_comm.  8 iterations on 2 ranks; rank 1's
``predictor/l2`` takes ``delay`` seconds per call (``_common.CLOCK``).  One
window: iterations 5 and 6.
"""

import os
import sys

import _common

import chainer_hookext


def main():
    comm, out = _common.setup()
    delay, use_comm = float(sys.argv[2]), sys.argv[3] == 'True'
    trainer_out = os.path.join(out, 'trainer')  # shared by the ranks
    trainer, _ = _common.make_trainer(
        comm, trainer_out, stop=(8, 'iteration'),
        delay=delay if comm.rank == 1 else 0.0)
    timeline = chainer_hookext.Timeline(
        iterations=2, comm=comm if use_comm else None)
    trainer.extend(timeline, trigger=(4, 'iteration'))
    trainer.run()
    _common.save(comm, out, {'written': [
        os.path.relpath(p, trainer_out) for p in timeline.written]})


if __name__ == '__main__':
    main()

"""TimedLoop(comm=...) in ChainerMN's example layout.

argv: out delay allreduce.  8 iterations (2 epochs of 4) on 2 ranks; rank
1's ``predictor/l2`` takes ``delay`` seconds per call and every rank's
gradient all-reduce ``allreduce`` seconds, everything else no time
(``_common.CLOCK``).
"""

import os
import sys

import _common

from chainer.training import extensions

import chainer_hookext


def main():
    comm, out = _common.setup()
    delay, allreduce = float(sys.argv[2]), float(sys.argv[3])
    trainer_out = os.path.join(out, 'rank{}'.format(comm.rank))
    trainer, model = _common.make_trainer(
        comm, trainer_out, stop=(8, 'iteration'),
        delay=delay if comm.rank == 1 else 0.0)
    mean_grad = comm.multi_node_mean_grad

    def slow_mean_grad(*args, **kwargs):
        _common.CLOCK.sleep(allreduce)
        return mean_grad(*args, **kwargs)
    comm.multi_node_mean_grad = slow_mean_grad
    trainer.extend(chainer_hookext.TimedLoop(comm=comm, print_report=True),
                   trigger=(1, 'epoch'))
    trainer.extend(extensions.LogReport())
    optimizer = trainer.updater.get_optimizer('main')
    printed, log = _common.run_and_read_log(trainer)
    _common.save(comm, out, {
        'log': _common.select(log, lambda key: 'time/loop' in key),
        'printed': printed,
        'left': sorted(set(vars(optimizer)) & {'update'}),
        'comm_wrapped': comm.multi_node_mean_grad is not slow_mean_grad,
        'model_forward_left': 'forward' in vars(model),
    })


if __name__ == '__main__':
    main()

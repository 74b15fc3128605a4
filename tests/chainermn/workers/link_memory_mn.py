"""LinkMemory(comm=...) in ChainerMN's example layout.

argv: out local_report.  8 iterations on 2 ranks, reports every 4; rank 1
trains on batches of 8, rank 0 of 4: rank 1 keeps twice the activations.
"""

import os
import sys

import _common

from chainer.training import extensions

import chainer_hookext


def main():
    comm, out = _common.setup()
    local_report = sys.argv[2] == 'True'
    trainer_out = os.path.join(out, 'rank{}'.format(comm.rank))
    trainer, model = _common.make_trainer(
        comm, trainer_out, stop=(8, 'iteration'),
        batchsize=8 if comm.rank == 1 else 4, evaluator=False)
    trainer.extend(chainer_hookext.LinkMemory(
        comm=comm, print_report=True, local_report=local_report),
        trigger=(4, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(4, 'iteration')))
    printed, log = _common.run_and_read_log(trainer)
    _common.save(comm, out, {
        'log': _common.select(log, lambda key: key.startswith('memory/')),
        'iterations': [entry['iteration'] for entry in log],
        'printed': printed,
        'hooks_left': _common.hooks_left(model),
    })


if __name__ == '__main__':
    main()

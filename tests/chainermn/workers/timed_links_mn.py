"""TimedLinks(comm=...) in ChainerMN's example layout.

argv: out local_report delay [flops [functions]].  8 iterations (2 epochs
of 4) on 2 ranks; rank 1's ``predictor/l2`` takes ``delay`` seconds per call,
everything else no time (``_common.CLOCK``).  Every rank has a
``LogReport`` to show what it reported; stdout is kept to show what it
printed.
"""

import os
import sys

import _common

from chainer.training import extensions

import chainer_hookext


def main():
    comm, out = _common.setup()
    local_report = sys.argv[2] == 'True'
    delay = float(sys.argv[3])
    flops = sys.argv[4:5] == ['True']
    functions = sys.argv[5:] == ['True']
    trainer_out = os.path.join(out, 'rank{}'.format(comm.rank))
    trainer, model = _common.make_trainer(
        comm, trainer_out, stop=(8, 'iteration'),
        delay=delay if comm.rank == 1 else 0.0)
    trainer.extend(chainer_hookext.TimedLinks(
        comm=comm, validation=True, print_report=True,
        local_report=local_report, flops=flops, functions=functions,
        **(dict(peak_flops=1e15, peak_bandwidth=1e15) if flops else {})),
        trigger=(1, 'epoch'))
    trainer.extend(extensions.LogReport())
    printed, log = _common.run_and_read_log(trainer)
    _common.save(comm, out, {
        'log': _common.select(log, lambda k: 'time/' in k or 'flops/' in k),
        'iterations': [entry['iteration'] for entry in log],
        'printed': printed,
        'hooks_left': _common.hooks_left(model),
    })


if __name__ == '__main__':
    main()

"""LinkMemory(comm=...) in ChainerMN's example layout.

argv: out local_report.  8 iterations on 2 ranks, reports every 4; rank 1
trains on batches of 8, rank 0 of 4: rank 1 keeps twice the activations.
"""

import contextlib
import io
import json
import os
import sys

import _common

import chainer
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
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trainer.run()
    with open(os.path.join(trainer_out, 'log')) as f:
        log = json.load(f)
    left = list(chainer._get_link_hooks().values())
    left += list(chainer.get_function_hooks().values())
    _common.save(comm, out, {
        'log': [{k: v for k, v in entry.items() if k.startswith('memory/')}
                for entry in log],
        'iterations': [entry['iteration'] for entry in log],
        'printed': printed.getvalue(),
        'hooks_left': [h.name for h in left],
    })


if __name__ == '__main__':
    main()

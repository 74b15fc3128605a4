#!/usr/bin/env python
"""Data-parallel training with ChainerMN, timing every link on every worker.

The shape of ChainerMN's ``examples/mnist/train_mnist.py``, plus
:class:`~chainer_hookext.TimedLinks` given the communicator: at each epoch
every worker's per-link times are gathered on rank 0, which reports the mean
over workers (``time/main/predictor/l1``), the spread
(``time/main/predictor/l1/max``, ``.../min``) and the slowest worker
(``.../slowest_rank``), and prints them as a tree tables.
:class:`~chainer_hookext.TimedLoop`, given it too, does the same for where
each iteration goes (``time/loop/forward``, ``time/loop/allreduce`` ...),
and :class:`~chainer_hookext.Timeline` writes one trace of three iterations
holding every rank.

Run it with two processes (offline: scikit-learn's bundled 8x8 digits)::

    mpiexec -n 2 python examples/train_digits_mn.py

As root, or with more processes than cores, Open MPI wants
``mpiexec --allow-run-as-root --oversubscribe -n 2 ...``.  ``--slow-rank 1``
makes rank 1's ``l2`` sleep 2 ms per call, to see a straggler named.  Run it
again with the same ``--out`` to resume every rank from its own snapshot.
"""

import argparse
import sys
import time

import chainer
import chainer.functions as F
import chainer.links as L
import chainermn
from chainer import training
from chainer.training import extensions

import chainer_hookext
from train_digits import end_of_epoch  # the single-process example, beside
from train_digits import load_digits


class DelayedLinear(L.Linear):
    """A :class:`~chainer.links.Linear` that sleeps ``delay`` s per call."""

    def __init__(self, *args, delay=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.delay = delay

    def forward(self, x):
        if self.delay:
            time.sleep(self.delay)
        return super().forward(x)


class MLP(chainer.Chain):
    """Three fully connected layers with ReLU activations."""

    def __init__(self, n_units, n_out, delay=0.0):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(None, n_units)
            self.l2 = DelayedLinear(None, n_units, delay=delay)
            self.l3 = L.Linear(None, n_out)

    def forward(self, x):
        h1 = F.relu(self.l1(x))
        h2 = F.relu(self.l2(h1))
        return self.l3(h2)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='chainer_hookext example: per-link timing on ChainerMN')
    parser.add_argument('--batchsize', '-b', type=int, default=100,
                        help='Number of images in each mini-batch '
                        '(per worker)')
    parser.add_argument('--communicator', type=str, default='naive',
                        help='Type of communicator (pure_nccl on GPUs)')
    parser.add_argument('--epoch', '-e', type=int, default=5,
                        help='Number of sweeps over the dataset to train')
    parser.add_argument('--gpu', '-g', action='store_true',
                        help='Use a GPU per worker (comm.intra_rank)')
    parser.add_argument('--out', '-o', default='result_mn',
                        help='Directory to output the result')
    parser.add_argument('--unit', '-u', type=int, default=256,
                        help='Number of units')
    parser.add_argument('--slow-rank', type=int, default=None,
                        help='Rank whose l2 sleeps --delay seconds per call')
    parser.add_argument('--delay', type=float, default=0.002,
                        help='Sleep of the slow rank\'s l2 per call (s)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.gpu and args.communicator == 'naive':
        print("Error: the 'naive' communicator does not support GPUs; use "
              '--communicator pure_nccl.', file=sys.stderr)
        return 2
    comm = chainermn.create_communicator(args.communicator)
    device = chainer.get_device(
        '@cupy:{}'.format(comm.intra_rank) if args.gpu else '@numpy')

    if comm.rank == 0:
        print('Num process (COMM_WORLD): {}'.format(comm.size))
        print('Using {} communicator on {}'.format(args.communicator, device))
        print('# unit: {}, # minibatch-size: {}, # epoch: {}\n'.format(
            args.unit, args.batchsize, args.epoch))

    delay = args.delay if comm.rank == args.slow_rank else 0.0
    model = L.Classifier(MLP(args.unit, 10, delay=delay))
    model.to_device(device)
    device.use()
    # All workers' gradients are averaged before each update.
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.Adam(), comm)
    optimizer.setup(model)

    # Rank 0 loads the data and scatters equal shares to every worker, so
    # every worker ends its epochs at the same iteration.
    train, test = load_digits() if comm.rank == 0 else (None, None)
    train = chainermn.scatter_dataset(train, comm, shuffle=True)
    test = chainermn.scatter_dataset(test, comm, shuffle=True)
    train_iter = chainer.iterators.SerialIterator(train, args.batchsize)
    test_iter = chainer.iterators.SerialIterator(
        test, args.batchsize, repeat=False, shuffle=False)

    updater = training.updaters.StandardUpdater(
        train_iter, optimizer, device=device)
    trainer = training.Trainer(updater, (args.epoch, 'epoch'), out=args.out)

    evaluator = extensions.Evaluator(test_iter, model, device=device)
    trainer.extend(chainermn.create_multi_node_evaluator(evaluator, comm))

    # Every worker times its links; at each epoch the figures are gathered
    # on rank 0, which reports mean/min/max/slowest_rank per link and
    # prints the tables.  Every rank must have this extension.
    trainer.extend(chainer_hookext.TimedLinks(comm=comm, print_report=True),
                   trigger=(1, 'epoch'))
    # Where each iteration goes (data, forward, backward, allreduce ...),
    # gathered the same way; after the evaluator, so its time is in the
    # same epoch's figures.
    trainer.extend(chainer_hookext.TimedLoop(comm=comm, print_report=True),
                   trigger=(1, 'epoch'))
    # Three iterations of epoch 2 traced on every rank; rank 0 writes one
    # file, each rank a process of its own on one time axis:
    # <out>/timeline/iteration_<N>.json.gz.  Every rank must have it.
    trainer.extend(chainer_hookext.Timeline(iterations=3, comm=comm),
                   trigger=end_of_epoch(1))

    # Each rank saves and resumes its own state (its own timings): one
    # replica set per rank.  The wrapper has the default priority: give it
    # the snapshot's, so that it runs after LogReport as snapshot does.
    snapshot = extensions.snapshot(n_retains=1, autoload=True)
    trainer.extend(chainermn.extensions.multi_node_snapshot(
        comm, snapshot, [[rank] for rank in range(comm.size)]),
        trigger=(1, 'epoch'), priority=snapshot.priority)

    # Some display and output extensions are only needed on one worker.
    if comm.rank == 0:
        trainer.extend(extensions.LogReport())
        trainer.extend(extensions.PrintReport(
            ['epoch', 'main/loss', 'validation/main/accuracy',
             'time/main', 'time/main/max', 'time/main/slowest_rank',
             'elapsed_time']))

    trainer.run()
    return 0


if __name__ == '__main__':
    sys.exit(main())

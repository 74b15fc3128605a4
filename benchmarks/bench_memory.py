#!/usr/bin/env python
"""LinkMemory: cost of its iterations, memory it keeps, agreement with NumPy.

A real ``Trainer`` trains a classifier (SGD, a ``LogReport`` every 100
iterations; ``bench_loop.make_trainer``).  Four tables:

1. Unmeasured iterations: instructions per training iteration of the MLP
   784-100-100-10 (batch 32) with ``LinkMemory()`` at a trigger of 1000
   iterations (it measures the run's first iteration only) against no
   extension, counted by ``bench_loop.py``'s method: each variant in its
   own process under valgrind's cachegrind (``PYTHONHASHSEED=0``) for N1
   and N2 iterations (``--counts``), (I(N2) - I(N1)) / (N2 - N1); the
   no-extension process runs twice (the A/A row shows the noise).
2. A measured iteration: ``bench_loop.Deep`` models of ``--depths`` links
   (``L.Linear`` with a ``relu`` between two: 784-10, then 10-10, batch
   32), ``LinkMemory`` reporting every iteration (each one measured, its
   report included) against ``LinkMemory`` at a trigger of 1000 (only the
   first measured), ``--iterations`` per run, shuffled order in each of
   ``--rounds`` rounds, process CPU time; the extra time of a measured
   iteration is the median over rounds of the paired differences divided
   by ``iterations - 1``, given per function node created in forward,
   and a least-squares line through the depths.
3. Retained memory: ``tracemalloc`` after ``gc.collect()`` at iterations
   ``--n`` and 2N, read by a probe at ``PRIORITY_LAST - 1``, without
   ``LinkMemory`` and with it reporting every 10 iterations, with the
   ``LogReport`` (whose log keeps each entry, ``LinkMemory``'s keys
   included) and without.
4. Agreement: ``LinkMemory``'s total (the roots' ``activations`` plus
   ``(outside)``) of a measured iteration against the NumPy memory
   (tracemalloc's NumPy domain) allocated and not freed from the start of
   the predictor's forward to the end of the ``Classifier``'s (Chainer's
   ``optimizer.update`` clears the gradients between the loss and the
   backward, so the window ends with the forward, as in
   ``tests/memory/test_agreement.py``).  The window's bytes of every
   domain less NumPy's are the graph's Python objects (nodes, variables,
   tuples), per function node created in it: in an unmeasured iteration
   and in the measured one (the tracer's own records added).  Besides the
   two MLPs and the CNN, two training patterns: a gradient penalty
   computed with ``chainer.grad`` inside the forward, and a mask the model
   makes and multiplies by.

Run: ``python benchmarks/bench_memory.py [--no-instructions] [--counts 20
70] [--depths 2 8 32 64] [--rounds 15] [--iterations 20] [--n 200]``
(about 3 minutes on 2 cores, 2 of them table 1's cachegrind runs, as
many at a time as there are cores)
"""

import argparse
import gc
import os
import random
import shutil
import statistics
import tempfile
import time
import tracemalloc

import bench_loop  # benchmarks/, beside this script (sets 1 BLAS thread)
import bench_timer
import chainer
import chainer.functions as F
import chainer.links as L
from chainer import training

import chainer_hookext

#: NumPy registers its data buffers in this tracemalloc domain.
NUMPY_DOMAIN = 389047
UNMEASURED = 'LinkMemory, unmeasured iterations'
KIB = 1024.0


def instructions_table(counts):
    variants = ('no extension', UNMEASURED, 'no extension, again')
    per_iteration = bench_loop.instructions_per_iteration(
        'mlp', variants, counts, jobs=os.cpu_count() or 1)
    bare = per_iteration['no extension']
    n1, n2 = counts
    print('1. Unmeasured iterations: instructions per training iteration, '
          'MLP 784-100-100-10, batch 32 (cachegrind; ({} - {} iterations) '
          '/ {})'.format(n2, n1, n2 - n1))
    print()
    print('| variant | instructions / iteration | extra | vs no extension |')
    print('|---|---:|---:|---:|')
    for variant, count in per_iteration.items():
        print('| {} | {:,.0f} | {:+,.0f} | {:+.2f}% |'.format(
            variant, count, count - bare, (count / bare - 1) * 100))
    print()


class NodeCounter(chainer.FunctionHook):
    """Counts the function nodes applied in forward (before a backward
    step, or with ``through_backward`` those of a ``chainer.grad`` too)
    while ``counting``."""

    name = 'NodeCounter'

    def __init__(self, through_backward=False):
        self.counting = True
        self.through_backward = through_backward
        self.nodes = 0

    def forward_preprocess(self, function, in_data):
        if self.counting:
            self.nodes += 1

    def backward_preprocess(self, function, in_data, out_grad):
        if not self.through_backward:
            self.counting = False


def forward_nodes(predictor):
    with tempfile.TemporaryDirectory() as out:
        trainer = bench_loop.make_trainer(predictor, out, 1)
        with NodeCounter() as counter:
            trainer.updater.update()
    return counter.nodes


def timed_run(depth, every, iterations, out):
    """CPU seconds of a run, ``LinkMemory`` reporting every ``every``
    iterations."""
    trainer = bench_loop.make_trainer(bench_loop.Deep(depth), out, iterations)
    trainer.extend(chainer_hookext.LinkMemory(), trigger=(every, 'iteration'))
    start = time.process_time()
    trainer.run()
    return time.process_time() - start


def measured_table(depths, rounds, iterations):
    every = {'unmeasured': 1000, 'measured': 1}
    runs = [(d, v) for d in depths for v in every]
    times = {run: [] for run in runs}
    with tempfile.TemporaryDirectory() as out:
        for depth, variant in runs:  # warm-up
            timed_run(depth, every[variant], 3, out)
        for _ in range(rounds):
            random.shuffle(runs)
            for depth, variant in runs:
                times[depth, variant].append(timed_run(
                    depth, every[variant], iterations, out))
    print('2. A measured iteration (its report included) against an '
          'unmeasured one: bench_loop.Deep models, batch 32, {} iterations '
          'per run, {} rounds, process CPU time'.format(iterations, rounds))
    print()
    print('| links | function nodes in forward | us / unmeasured iteration '
          '(best) | extra us / measured iteration (median of paired rounds) '
          '| measured / unmeasured | extra us / node |')
    print('|---:|---:|---:|---:|---:|---:|')
    points = []
    for depth in depths:
        nodes = forward_nodes(bench_loop.Deep(depth))
        base = times[depth, 'unmeasured']
        extra = statistics.median(
            (m - u) / (iterations - 1)
            for m, u in zip(times[depth, 'measured'], base))
        iteration = min(base) / iterations
        points.append((nodes, extra))
        print('| {} | {} | {:.0f} | {:+.0f} | {:.2f}x | {:+.1f} |'.format(
            depth, nodes, iteration * 1e6, extra * 1e6,
            (iteration + extra) / iteration, extra / nodes * 1e6))
    if len(points) > 1:
        mean_n = statistics.mean(n for n, _ in points)
        mean_e = statistics.mean(e for _, e in points)
        slope = sum((n - mean_n) * (e - mean_e) for n, e in points) / sum(
            (n - mean_n) ** 2 for n, _ in points)
        print()
        print('Least-squares line: extra us per measured iteration = {:.0f} '
              '+ {:.1f} x function nodes'.format(
                  (mean_e - slope * mean_n) * 1e6, slope * 1e6))
    print()


class Readings(training.Extension):
    """Bytes traced after ``gc.collect()`` at the given iterations' ends,
    after every other extension."""

    trigger = 1, 'iteration'
    priority = chainer_hookext.PRIORITY_LAST - 1

    def __init__(self, iterations):
        self.bytes = dict.fromkeys(iterations)

    def __call__(self, trainer):
        if trainer.updater.iteration in self.bytes:
            gc.collect()
            self.bytes[trainer.updater.iteration] = (
                tracemalloc.get_traced_memory()[0])


def retained(every, log, n, out):
    """Bytes traced after iterations n and 2n; ``every``: LinkMemory's
    trigger, or ``None`` for no LinkMemory; ``log``: with a LogReport."""
    trainer = bench_loop.make_trainer('mlp', out, 2 * n, log=log)
    readings = Readings((n, 2 * n))
    trainer.extend(readings)
    if every is not None:
        trainer.extend(chainer_hookext.LinkMemory(),
                       trigger=(every, 'iteration'))
    tracemalloc.start()
    try:
        trainer.run()
    finally:
        tracemalloc.stop()
    return readings.bytes[n], readings.bytes[2 * n]


def retained_table(n):
    variants = (('no extension', None, True),
                ('LinkMemory, reporting every 10 iterations', 10, True),
                ('no extension, no LogReport', None, False),
                ('LinkMemory, reporting every 10 iterations, no LogReport',
                 10, False),
                ('no extension, no LogReport, again', None, False))
    print('3. Retained memory (tracemalloc, KiB, after gc.collect()), MLP '
          '784-100-100-10, batch 32, N={}; last column: over the first '
          'no-extension row with the same LogReport (every 100 iterations) '
          'or none'.format(n))
    print()
    print('| variant | N | 2N | growth | growth over no extension |')
    print('|---|---:|---:|---:|---:|')
    bare = {}
    with tempfile.TemporaryDirectory() as out:
        for label, every, log in variants:
            first, second = retained(every, log, n, out)
            growth = second - first
            bare.setdefault(log, growth)
            print('| {} | {:.1f} | {:.1f} | {:+.1f} | {:+.1f} |'.format(
                label, first / KIB, second / KIB, growth / KIB,
                (growth - bare[log]) / KIB))
    print()


class CNN(chainer.Chain):
    """conv-bn-relu-pool, conv-relu-pool, dropout, fc (28x28 inputs)."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.conv1 = L.Convolution2D(1, 16, ksize=3, pad=1)
            self.norm1 = L.BatchNormalization(16)
            self.conv2 = L.Convolution2D(16, 32, ksize=3, pad=1)
            self.out = L.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        h = F.max_pooling_2d(F.relu(self.norm1(self.conv1(x))), 2)
        h = F.max_pooling_2d(F.relu(self.conv2(h)), 2)
        return self.out(F.dropout(h, 0.25))


class Penalized(chainer.Chain):
    """MLP 784-100-100-10 whose forward computes a gradient penalty after
    its first layer (``chainer.grad`` with double backprop), added to the
    loss by :meth:`loss`."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(784, 100)
            self.l2 = L.Linear(100, 100)
            self.l3 = L.Linear(100, 10)
        self.penalty = None

    def forward(self, x):
        x = chainer.Variable(x)
        h = F.tanh(self.l1(x))
        gx, = chainer.grad([F.sum(h)], [x], enable_double_backprop=True)
        self.penalty = F.sum(gx * gx)
        return self.l3(F.relu(self.l2(h)))

    def loss(self, y, t):
        penalty, self.penalty = self.penalty, None  # the graph's only owner
        return F.softmax_cross_entropy(y, t) + penalty


class Masked(chainer.Chain):
    """MLP 784-256-10 multiplying its hidden layer by a mask it makes."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(784, 256)
            self.l2 = L.Linear(256, 10)

    def forward(self, x):
        h = F.relu(self.l1(x))
        mask = (self.xp.random.rand(*h.shape) > 0.5).astype(h.dtype)
        return self.l2(h * mask)


class Window(chainer.LinkHook):
    """Per iteration, what stays allocated from the start of the
    predictor's forward to the end of the classifier's: bytes of NumPy's
    domain, of every domain, and the function nodes applied."""

    name = 'Window'

    def __init__(self, classifier):
        self.classifier = classifier
        self.nodes = NodeCounter(through_backward=True)  # the window's own
        self.rows = []  # [(numpy bytes, all bytes, nodes)]

    def traced(self):
        every = tracemalloc.get_traced_memory()[0]  # before the snapshot
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.DomainFilter(True, NUMPY_DOMAIN)])
        return sum(trace.size for trace in snapshot.traces), every

    def forward_preprocess(self, args):
        if args.link is self.classifier.predictor:
            self.start = self.traced()
            self.nodes.nodes = 0
            self.nodes.counting = True

    def forward_postprocess(self, args):
        if args.link is self.classifier:
            self.nodes.counting = False
            numpy_bytes, every = self.traced()
            self.rows.append((numpy_bytes - self.start[0],
                              every - self.start[1], self.nodes.nodes))


def agreement(predictor, batchsize, shape, out):
    """Runs 6 iterations, LinkMemory measuring iterations 1 and 4; returns
    its total for iteration 4 and the windows of iterations 4 (measured)
    and 5 (not)."""
    trainer = bench_loop.make_trainer(predictor, out, 6, batchsize, shape)
    if isinstance(predictor, Penalized):
        trainer.updater.get_optimizer('main').target.lossfun = (
            predictor.loss)
    memory = chainer_hookext.LinkMemory()
    trainer.extend(memory, trigger=(3, 'iteration'))
    window = Window(trainer.updater.get_optimizer('main').target)
    tracemalloc.start()
    try:
        with window, window.nodes:
            trainer.run()
    finally:
        tracemalloc.stop()
    total = sum(row.activations for row in memory.last_
                if row.parent is None)  # the roots and (outside)
    return total, window.rows[3], window.rows[4]


def agreement_table():
    models = (('MLP 784-100-100-10, batch 32', bench_timer.MLP, 32, (784,)),
              ('CNN (conv-bn-relu-pool, conv-relu-pool, dropout, fc), '
               'batch 32', CNN, 32, (1, 28, 28)),
              ('MLP 784-1000-1000-10, batch 100',
               lambda: bench_timer.MLP(n_units=1000), 100, (784,)),
              ('MLP 784-100-100-10, a gradient penalty in the forward, '
               'batch 32', Penalized, 32, (784,)),
              ('MLP 784-256-10, a mask it makes, batch 32', Masked, 32,
               (784,)))
    print('4. LinkMemory against NumPy (tracemalloc, bytes kept from the '
          'start of the predictor\'s forward to the end of the '
          'Classifier\'s, measured iteration)')
    print()
    print('| model | function nodes | LinkMemory total | NumPy, allocated and '
          'kept | difference | Python objects / node | same, measured '
          'iteration |')
    print('|---|---:|---:|---:|---:|---:|---:|')
    with tempfile.TemporaryDirectory() as out:
        for label, make, batchsize, shape in models:
            total, measured, unmeasured = agreement(
                make(), batchsize, shape, out)
            numpy_bytes, every, nodes = measured
            if unmeasured[0] != numpy_bytes or unmeasured[2] != nodes:
                print('(unmeasured iteration: {:,} NumPy bytes, {} nodes)'
                      .format(unmeasured[0], unmeasured[2]))
            print('| {} | {} | {:,} | {:,} | {:+.2f}% | {:,.0f} B | {:,.0f} '
                  'B |'.format(
                      label, nodes, total, numpy_bytes,
                      (total / numpy_bytes - 1) * 100,
                      (unmeasured[1] - unmeasured[0]) / nodes,
                      (every - numpy_bytes) / nodes))
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--no-instructions', action='store_true',
                        help='skip table 1 (cachegrind, about 2 minutes)')
    parser.add_argument('--counts', type=int, nargs=2, default=(20, 70),
                        metavar=('N1', 'N2'),
                        help='iterations of the two runs under valgrind')
    parser.add_argument('--depths', type=int, nargs='+',
                        default=(2, 8, 32, 64))
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument('--iterations', type=int, default=20)
    parser.add_argument('--n', type=int, default=200,
                        help='retained memory after N and 2N iterations')
    args = parser.parse_args()
    if args.no_instructions:
        pass
    elif shutil.which('valgrind') is None:
        print('valgrind not found: no instruction counts\n')
    else:
        instructions_table(args.counts)
    measured_table(args.depths, args.rounds, args.iterations)
    retained_table(args.n)
    agreement_table()


if __name__ == '__main__':
    main()

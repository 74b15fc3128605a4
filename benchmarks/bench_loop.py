#!/usr/bin/env python
"""Cost of TimedLoop and Timeline on a whole training iteration.

A real ``Trainer`` trains the small MLP classifier of ``bench_timer.py``
(784-100-100-10, batch 32, SGD) for ``--iterations`` iterations per run,
with a ``LogReport`` as the only other extension.  Variants, in shuffled
order in each round, each on a fresh trainer:

* no extension of ours (twice: the A/A row shows the noise);
* ``TimedLoop()`` (reporting every 100 iterations);
* ``Timeline(iterations=3)`` whose trigger never fires: the cost outside
  windows;
* ``Timeline(iterations=N)`` fired before the first iteration: every
  iteration inside the window, the file written at the end included.

The table gives the median over rounds of each variant's time per
iteration divided by the baseline's of the same round (paired medians
cancel the machine's drifts), and the best time per iteration.  Times are
the process's CPU time of ``trainer.run()``.

Run: ``python benchmarks/bench_loop.py [--rounds 15] [--iterations 300]``
"""

import argparse
import os
import random
import statistics
import tempfile
import time

# One BLAS thread, as bench_timer.py sets it.
for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import chainer  # NOQA: E402 (after the BLAS settings)
import chainer.links as L  # NOQA: E402
import numpy  # NOQA: E402
from chainer import training  # NOQA: E402
from chainer.training import extensions  # NOQA: E402

import bench_timer  # NOQA: E402 (benchmarks/, beside this script)
import chainer_hookext  # NOQA: E402


def make_trainer(out, iterations, batchsize=32):
    model = L.Classifier(bench_timer.MLP())
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    rng = numpy.random.RandomState(0)
    x = rng.rand(batchsize * 8, 784).astype(numpy.float32)
    t = rng.randint(0, 10, batchsize * 8).astype(numpy.int32)
    it = chainer.iterators.SerialIterator(
        chainer.datasets.TupleDataset(x, t), batchsize)
    updater = training.updaters.StandardUpdater(it, optimizer)
    trainer = training.Trainer(updater, (iterations, 'iteration'), out=out)
    trainer.extend(extensions.LogReport(trigger=(100, 'iteration'),
                                        log_name=None))
    return trainer


def never(trainer):
    return False


def first(trainer):
    return trainer.updater.iteration == 0


VARIANTS = {
    'no extension': lambda n: [],
    'TimedLoop()': lambda n: [
        (chainer_hookext.TimedLoop(), (100, 'iteration'))],
    'Timeline, outside windows': lambda n: [
        (chainer_hookext.Timeline(iterations=3), never)],
    'Timeline, every iteration in a window': lambda n: [
        (chainer_hookext.Timeline(iterations=n), first)],
    'no extension, again': lambda n: [],
}


def run(variant, iterations, out):
    trainer = make_trainer(out, iterations)
    for extension, trigger in VARIANTS[variant](iterations):
        trainer.extend(extension, trigger=trigger, call_before_training=(
            trigger is first))
    start = time.process_time()
    trainer.run()
    return (time.process_time() - start) / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument('--iterations', type=int, default=300)
    args = parser.parse_args()
    times = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as out:
        for variant in VARIANTS:  # warm-up
            run(variant, 20, os.path.join(out, 'warm'))
        for r in range(args.rounds):
            order = list(VARIANTS)
            random.shuffle(order)
            for variant in order:
                times[variant].append(run(
                    variant, args.iterations,
                    os.path.join(out, '{}-{}'.format(r, len(times[variant])))))
    bare = times['no extension']
    print('Whole training iteration, MLP 784-100-100-10, batch 32, {} '
          'iterations per run, {} rounds'.format(args.iterations, args.rounds))
    print('| variant | us / iteration (best) | vs no extension (median of '
          'paired rounds) |')
    print('|---|---:|---:|')
    for variant, values in times.items():
        paired = statistics.median(v / b for v, b in zip(values, bare))
        print('| {} | {:.1f} | {:+.2f}% |'.format(
            variant, min(values) * 1e6, (paired - 1) * 100))


if __name__ == '__main__':
    main()

#!/usr/bin/env python
"""Cost of the memory counters: ``Timeline(memory=True)`` and the peak.

A real ``Trainer`` trains a classifier (Adam, batch 32, 8 batches of
random data) of ``--model``: the MLP 784-100-100-10 or the small CNN
(conv, batch norm, conv, linear) of ``tests/memory/test_agreement.py``.
Variants, each on a fresh trainer:

* ``Timeline(iterations=N)`` fired before the first iteration, with
  ``memory=False`` (twice: the A/A row shows the noise) and with
  ``memory=True``: every iteration traced, the file written at the end
  included (issue 47's budget: at most 1.10);
* ``Timeline()`` and ``Timeline(memory=True)`` whose trigger never fires:
  an untraced iteration (the counters cost nothing outside windows);
* ``LinkMemory()`` reporting every iteration (each one measured, its
  report included), with its peak (the default, a ``MemoryTimeline``
  recording the measured iteration) and with ``peak=False``; and
  ``LinkMemory()`` at a trigger it never reaches (the run's first
  iteration measured, the others not): the measured iteration's extra cost
  is the difference;
* no extension.

``--instructions`` counts instructions, free of the timing noise of a
shared machine: each variant runs in its own process under valgrind's
cachegrind (``PYTHONHASHSEED=0``, one BLAS thread, the objects made before
the training frozen out of the collector's way) for N1 and N2 iterations
(``--counts``), and (I(N2) - I(N1)) / (N2 - N1) is the count per
iteration, start-up cost cancelled.  Without it, the process's CPU time
per iteration of alternating runs (the median of ``--rounds`` paired
ratios), which scatters by more than 10% on a loaded machine.

Run: ``python benchmarks/bench_memory_timeline.py [--instructions]
[--model mlp cnn] [--counts 4 12] [--variants VARIANT ...]``
(``--instructions``: some minutes per model)
"""

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time

# One BLAS thread, as bench_timer.py sets it.
for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import chainer  # NOQA: E402 (after the BLAS settings)
import chainer.links as L  # NOQA: E402
import numpy  # NOQA: E402
from chainer import training  # NOQA: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import _cachegrind  # NOQA: E402 (benchmarks/, beside this script)
import chainer_hookext  # NOQA: E402
from tests.memory.test_agreement import CNN  # NOQA: E402
from tests.memory.test_agreement import MLP  # NOQA: E402

#: ``{name: (predictor, shape of one example)}``.
MODELS = {'mlp': (lambda: MLP(100), (784,)), 'cnn': (CNN, (1, 28, 28))}


def never(trainer):
    return False


def first(trainer):
    return trainer.updater.iteration == 0


def traced(memory):
    return lambda n: [(chainer_hookext.Timeline(iterations=n, memory=memory),
                       first)]


def untraced(memory):
    return lambda n: [(chainer_hookext.Timeline(memory=memory), never)]


def link_memory(trigger, peak=True):
    return lambda n: [(chainer_hookext.LinkMemory(peak=peak), trigger)]


#: ``{variant: extensions(iterations) -> [(extension, trigger)]}``.
VARIANTS = {
    'no extension': lambda n: [],
    'traced, memory=False': traced(False),
    'traced, memory=True': traced(True),
    'traced, memory=False, again': traced(False),
    'untraced, memory=False': untraced(False),
    'untraced, memory=True': untraced(True),
    'LinkMemory, unmeasured': link_memory((10 ** 6, 'iteration')),
    'LinkMemory(peak=False), measured': link_memory(
        (1, 'iteration'), peak=False),
    'LinkMemory(), measured': link_memory((1, 'iteration')),
}


def make_trainer(model, out, iterations):
    numpy.random.seed(0)  # the weights: the same in every process
    predictor, shape = MODELS[model]
    classifier = L.Classifier(predictor())
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(classifier)
    rng = numpy.random.RandomState(0)
    x = rng.rand(32 * 8, *shape).astype(numpy.float32)
    t = rng.randint(0, 10, 32 * 8).astype(numpy.int32)
    # In order: unseeded weights and shuffles moved NumPy's counts by up
    # to 1% between two runs of one variant.
    it = chainer.iterators.SerialIterator(
        chainer.datasets.TupleDataset(x, t), 32, shuffle=False)
    updater = training.updaters.StandardUpdater(it, optimizer)
    return training.Trainer(updater, (iterations, 'iteration'), out=out)


def run(model, variant, iterations):
    """CPU seconds per iteration of ``iterations`` under ``variant``."""
    with tempfile.TemporaryDirectory() as out:
        trainer = make_trainer(model, out, iterations)
        extensions = VARIANTS[variant](iterations)
        for extension, trigger in extensions:
            trainer.extend(extension, trigger=trigger,
                           call_before_training=trigger is first)
        # As bench_loop.py: a full collection landing in one variant's
        # counted iterations and not another's would move the counts.
        gc.collect()
        gc.freeze()
        start = time.process_time()
        trainer.run()
        seconds = (time.process_time() - start) / iterations
        gc.unfreeze()
    for extension, trigger in extensions:  # what was meant was measured
        if trigger is first and not extension.written:
            raise RuntimeError(f'{variant}: no trace written')
        if trigger == (1, 'iteration') and (
                extension.peak and extension.peak_ is None):
            raise RuntimeError(f'{variant}: no peak reported')
    return seconds


def count_instructions(model, variant, iterations):
    """Instructions of a whole ``--run MODEL VARIANT ITERATIONS`` process
    under cachegrind."""
    return _cachegrind.instructions(
        __file__, ['--run', model, variant, iterations])


def instructions_per_iteration(model, variants, counts, jobs):
    """``{variant: (I(N2) - I(N1)) / (N2 - N1)}``."""
    return _cachegrind.per_iteration(
        lambda variant, n: count_instructions(model, variant, n),
        variants, counts, jobs)


#: The rows printed as ratios: ``(row, variant, baseline)``.
RATIOS = (
    ('traced iteration, memory=True / memory=False (budget: 1.10)',
     'traced, memory=True', 'traced, memory=False'),
    ('A/A: traced, memory=False again / memory=False',
     'traced, memory=False, again', 'traced, memory=False'),
    ('untraced iteration, memory=True / memory=False',
     'untraced, memory=True', 'untraced, memory=False'),
    ('LinkMemory measured iteration, peak / peak=False',
     'LinkMemory(), measured', 'LinkMemory(peak=False), measured'),
)


def print_table(model, per_iteration, unit):
    print(f'| {model}: variant | {unit} / iteration |')
    print('|---|---:|')
    for variant, value in per_iteration.items():
        print(f'| {variant} | {value:,.0f} |')
    print()
    print('| ratio | value | extra |')
    print('|---|---:|---:|')
    for row, variant, baseline in RATIOS:
        if variant in per_iteration and baseline in per_iteration:
            on, off = per_iteration[variant], per_iteration[baseline]
            print(f'| {row} | {on / off:.4f} | {on - off:+,.0f} |')
    names = ('LinkMemory(), measured', 'LinkMemory(peak=False), measured',
             'LinkMemory, unmeasured')
    if all(name in per_iteration for name in names):
        peak, plain, unmeasured = (per_iteration[n] for n in names)
        share = (peak - plain) / (peak - unmeasured)
        print(f'| the peak\'s share of the measured iteration\'s extra '
              f'over an unmeasured one | {share:.4f} | |')
    print()


def time_table(model, variants, rounds, iterations):
    for variant in variants:  # warm-up
        run(model, variant, 2)
    times = {variant: [] for variant in variants}
    for _ in range(rounds):
        for variant in variants:
            times[variant].append(run(model, variant, iterations))
    print(f'{model}: CPU us per iteration, the median of {rounds} rounds '
          f'of {iterations} iterations')
    print_table(model, {v: statistics.median(t) * 1e6
                        for v, t in times.items()}, 'us')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--model', nargs='+', choices=sorted(MODELS),
                        default=['mlp', 'cnn'])
    parser.add_argument('--variants', nargs='+', choices=list(VARIANTS),
                        default=list(VARIANTS), metavar='VARIANT')
    parser.add_argument('--instructions', action='store_true',
                        help='count instructions per iteration under '
                        'valgrind (some minutes per model)')
    parser.add_argument('--counts', type=int, nargs=2, default=(4, 12),
                        metavar=('N1', 'N2'),
                        help='iterations of the two runs under valgrind')
    parser.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                        help='with --instructions: processes at a time (the '
                        'counts do not depend on it)')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--iterations', type=int, default=20)
    parser.add_argument('--run', nargs=3, help=argparse.SUPPRESS,
                        metavar=('MODEL', 'VARIANT', 'ITERATIONS'))
    args = parser.parse_args()
    if args.run:
        run(args.run[0], args.run[1], int(args.run[2]))
        return
    for model in args.model:
        if args.instructions:
            if shutil.which('valgrind') is None:
                parser.error('--instructions: valgrind not found')
            n1, n2 = args.counts
            print(f'{model}: instructions per iteration (cachegrind, '
                  f'({n2} - {n1} iterations) / {n2 - n1})')
            print_table(model, instructions_per_iteration(
                model, args.variants, args.counts, args.jobs),
                'instructions')
        else:
            time_table(model, args.variants, args.rounds, args.iterations)


if __name__ == '__main__':
    main()

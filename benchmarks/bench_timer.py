#!/usr/bin/env python
"""Cost and memory of per-link timing hooks, side by side.

Per link call, on a chain of 100 identity links and on an MLP classifier:
no hook, an empty ``chainer.LinkHook``, Chainer's
``chainer.link_hooks.TimerHook`` and :class:`chainer_hookext.TimerHook`, the
latter both standalone and set up as :class:`~chainer_hookext.TimedLinks`
sets it up (reporter names, paths from the model, self times, training mode
only).  Each extra cost is printed as a ratio of the empty hook's extra cost.
Variants run in alternation (shuffled order, best of ``--rounds``) so that
load on the machine hits them alike; times are the thread's CPU time
(``time.thread_time``), which leaves out time the thread waits for a core.

Then the whole training iteration (forward, backward, update) of two MLP
classifiers, a small one and one the size of Chainer's MNIST example
(784-1000-1000-10, batch 100), with and without hooks (best and median of
the rounds), and the memory retained after N = 99,990 and 2N link calls
(``tracemalloc``, after ``gc.collect()``).

Run: ``python benchmarks/bench_timer.py`` (``--instructions`` adds the
instructions per link call counted by valgrind's cachegrind, free of the
timing noise of a shared machine).
"""

import argparse
import gc
import os
import random
import shutil
import statistics
import time
import tracemalloc

# One BLAS thread: the MLP's matrix products would otherwise compete with
# other work on the machine for cores and blur small differences.
for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import chainer  # NOQA: E402 (after the BLAS settings)
import chainer.functions as F  # NOQA: E402
import chainer.links as L  # NOQA: E402
import numpy  # NOQA: E402
from chainer.link_hooks import timer as chainer_timer  # NOQA: E402

import _cachegrind  # NOQA: E402 (benchmarks/, beside this script)
import chainer_hookext  # NOQA: E402


class Identity(chainer.Link):

    def forward(self, x):
        return x


class Identities(chainer.ChainList):

    def __init__(self, n=100):
        super().__init__(*[Identity() for _ in range(n)])

    def forward(self, x):
        for link in self:
            x = link(x)
        return x


class MLP(chainer.Chain):

    def __init__(self, n_in=784, n_units=100, n_out=10):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(n_in, n_units)
            self.l2 = L.Linear(n_units, n_units)
            self.l3 = L.Linear(n_units, n_out)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class EmptyHook(chainer.LinkHook):
    name = 'EmptyHook'


def as_timed_links(model):
    """Our hook configured as TimedLinks configures it for ``model``."""
    hook = chainer_hookext.TimerHook()
    names = {id(link): 'main' if path == '/' else 'main' + path
             for path, link in model.namedlinks()}
    hook.set_scope(names, train=True, eval=False)
    hook.add_root(model)
    return hook


def batch_times(fn, hooks, rounds, number):
    """Seconds per ``fn()`` call of each batch, for each hook.

    In each round every hook, in shuffled order, is registered for a batch
    of ``number`` calls and removed after it; the first call of a batch is
    not timed.
    """
    times = {key: [] for key in hooks}
    order = list(hooks)
    gc.disable()
    try:
        for _ in range(rounds):
            random.shuffle(order)
            for key in order:
                hook = hooks[key]
                if hook is not None:
                    hook.__enter__()
                try:
                    fn()  # a registration's first calls create its records
                    start = time.thread_time()
                    for _ in range(number):
                        fn()
                    seconds = (time.thread_time() - start) / number
                finally:
                    if hook is not None:
                        hook.__exit__()
                times[key].append(seconds)
    finally:
        gc.enable()
    return times


def best_times(fn, hooks, rounds, number):
    """Best seconds per ``fn()`` call under each hook, in alternation."""
    return {key: min(times) for key, times
            in batch_times(fn, hooks, rounds, number).items()}


VARIANTS = ('no hook', 'empty LinkHook', 'Chainer TimerHook',
            'ours, standalone', 'ours, as TimedLinks', 'no hook, again')


def hook_variants(model):
    hooks = (None, EmptyHook(), chainer_timer.TimerHook(),
             chainer_hookext.TimerHook(), as_timed_links(model), None)
    return dict(zip(VARIANTS, hooks))


def per_call_table(title, fn, model, calls, rounds, number):
    best = best_times(fn, hook_variants(model), rounds, number)
    bare = best['no hook']
    empty = best['empty LinkHook'] - bare
    print('\n{} ({} link calls per forward)'.format(title, calls))
    print('| hook | ns / link call | extra ns | extra vs empty hook |')
    print('|---|---:|---:|---:|')
    for key, seconds in best.items():
        extra = seconds - bare
        ratio = '-' if key == 'no hook' else '{:.2f}x'.format(extra / empty)
        if key == 'no hook, again':
            ratio += ' (noise)'
        print('| {} | {:.0f} | {:.0f} | {} |'.format(
            key, seconds / calls * 1e9, extra / calls * 1e9, ratio))


def iteration_table(n_units, batchsize, rounds, number):
    model = L.Classifier(MLP(n_units=n_units))
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    rng = numpy.random.RandomState(0)
    x = rng.rand(batchsize, 784).astype(numpy.float32)
    t = rng.randint(0, 10, batchsize).astype(numpy.int32)

    def iteration():
        optimizer.update(model, x, t)

    hooks = {'no hook': None, 'empty LinkHook': EmptyHook(),
             'Chainer TimerHook': chainer_timer.TimerHook(),
             'ours, as TimedLinks': as_timed_links(model),
             'no hook, again': None}
    times = batch_times(iteration, hooks, rounds, number)
    bare = times['no hook']
    best = {key: min(values) for key, values in times.items()}
    # Ratio to the 'no hook' batch of the same round: pairs cancel drifts.
    paired = {key: statistics.median(v / b for v, b in zip(values, bare))
              for key, values in times.items()}
    print('\nWhole training iteration (forward, backward, SGD update), MLP '
          'classifier 784-{0}-{0}-10, batch {1}, {2} rounds'.format(
              n_units, batchsize, rounds))
    print('| hook | us / iteration (best) | vs no hook (best) '
          '| vs no hook (median of paired rounds) |')
    print('|---|---:|---:|---:|')
    for key in hooks:
        print('| {} | {:.1f} | {:+.2f}% | {:+.2f}% |'.format(
            key, best[key] * 1e6, (best[key] / best['no hook'] - 1) * 100,
            (paired[key] - 1) * 100))


def retained_bytes(hook, fn, forwards):
    """Bytes retained after ``forwards`` and after ``2 * forwards`` calls."""
    retained = []
    with hook:
        fn()  # first calls create the per-link records
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2):
            for _ in range(forwards):
                fn()
            gc.collect()
            retained.append(tracemalloc.get_traced_memory()[0] - before)
        tracemalloc.stop()
    return retained


def memory_table():
    model = Identities()
    x = numpy.zeros(1, numpy.float32)
    forwards = 990  # x 101 link calls: 99,990 calls
    calls = forwards * 101
    print('\nMemory retained after N = {:,} and 2N link calls (100 identity '
          'links); growth per call = (2N - N) / N'.format(calls))
    print('| hook | after N (bytes) | after 2N (bytes) | bytes / call |')
    print('|---|---:|---:|---:|')
    for key, hook in hook_variants(model).items():
        if hook is None:  # nothing to measure
            continue
        first, second = retained_bytes(hook, lambda: model(x), forwards)
        print('| {} | {:,} | {:,} | {:.2f} |'.format(
            key, first, second, (second - first) / calls))


def run_forwards(variant, forwards):
    """Runs ``forwards`` forwards of the identity chain under one hook."""
    model = Identities()
    x = numpy.zeros(1, numpy.float32)
    hook = hook_variants(model)[variant]
    if hook is not None:
        hook.__enter__()
    # As bench_loop.py's: a full collection landing in one count and not
    # in the other moved a variant by some 200 instructions per link call.
    gc.collect()
    gc.freeze()
    for _ in range(forwards):
        model(x)


def instructions_table():
    """Instructions per link call under valgrind's cachegrind: no noise."""
    valgrind = shutil.which('valgrind')
    if valgrind is None:
        print('\n(--instructions: valgrind not found, skipped)')
        return
    print('\nInstructions per link call (100 identity links, cachegrind; '
          '(220 - 20 forwards) / 200)')
    print('| hook | instructions / link call | extra | extra vs empty hook |')
    print('|---|---:|---:|---:|')
    counts = {}
    for variant in VARIANTS[:-1]:
        refs = [_cachegrind.instructions(
            __file__, ['--run-forwards', variant, forwards])
            for forwards in (20, 220)]
        counts[variant] = (refs[1] - refs[0]) / 200 / 101
        extra = counts[variant] - counts['no hook']
        empty = counts.get('empty LinkHook', 0) - counts['no hook']
        ratio = f'{extra / empty:.2f}x' if empty > 0 else '-'
        print(f'| {variant} | {counts[variant]:.0f} | {extra:.0f} | '
              f'{ratio} |')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=100)
    parser.add_argument('--quick', action='store_true',
                        help='fewer rounds, for a smoke test')
    parser.add_argument('--instructions', action='store_true',
                        help='also count instructions per link call under '
                        'valgrind (a minute or two)')
    parser.add_argument('--run-forwards', nargs=2, help=argparse.SUPPRESS,
                        metavar=('VARIANT', 'FORWARDS'))
    args = parser.parse_args()
    if args.run_forwards:
        run_forwards(args.run_forwards[0], int(args.run_forwards[1]))
        return
    rounds = 3 if args.quick else args.rounds

    model = Identities()
    x = numpy.zeros(1, numpy.float32)
    per_call_table('Chain of 100 identity links', lambda: model(x), model,
                   101, rounds, 50)

    clf = L.Classifier(MLP())
    xb = numpy.zeros((32, 784), numpy.float32)
    tb = numpy.zeros(32, numpy.int32)
    with chainer.using_config('enable_backprop', False):
        per_call_table('MLP classifier forward, batch 32',
                       lambda: clf(xb, tb), clf, 5, rounds, 20)
    iteration_table(100, 32, rounds * 2, 5)
    iteration_table(1000, 100, max(rounds // 2, 1), 2)
    memory_table()
    if args.instructions:
        instructions_table()


if __name__ == '__main__':
    main()

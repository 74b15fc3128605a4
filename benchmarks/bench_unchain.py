#!/usr/bin/env python
"""Memory retained through keep_graph_on_report, with and without unchaining.

An MLP classifier (784-200-200-10, batch 100) trains with
``chainer.config.keep_graph_on_report`` on, beside a reader extension that
keeps the last 100 reported losses (a realistic leak: a moving average, a
plot buffer ...).  Each kept loss holds its whole computational graph unless
something unchains it.  ``tracemalloc`` (which sees NumPy's buffers) measures
the memory retained after ``N`` and ``2N`` iterations, after a
``gc.collect()``, with:

* no unchaining;
* Chainer's ``extensions.unchain_variables`` (priority 0, top-level values
  only);
* ``chainer_hookext.UnchainVariables``;

once with the loss reported as ``main/loss`` and once nested in a dict
(``chainer.report({'stats': {'loss': loss}}, model)``).  The growth from N
to 2N is printed as a percentage of the growth without unchaining; the
target for ``UnchainVariables`` is under 1%.

With the flag off, it then times whole iterations with and without
``UnchainVariables`` (alternating runs, best of each, and the no-extension runs
once more to show the run-to-run noise), and its trigger alone.

Run: ``python benchmarks/bench_unchain.py``
"""

import argparse
import collections
import gc
import tempfile
import time
import timeit
import tracemalloc

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
from chainer import training
from chainer.training import extensions

import chainer_hookext


class MLP(chainer.Chain):

    def __init__(self, n_units=200, n_out=10):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(784, n_units)
            self.l2 = L.Linear(n_units, n_units)
            self.l3 = L.Linear(n_units, n_out)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class NestedClassifier(chainer.Chain):
    """Reports its loss only as ``main/stats`` = ``{'loss': loss}``."""

    def __init__(self, predictor):
        super().__init__()
        with self.init_scope():
            self.predictor = predictor

    def forward(self, x, t):
        loss = F.softmax_cross_entropy(self.predictor(x), t)
        chainer.report({'stats': {'loss': loss}}, self)
        return loss


def make_trainer(out, iterations, nested):
    rng = numpy.random.RandomState(0)
    x = rng.rand(1000, 784).astype(numpy.float32)
    t = rng.randint(0, 10, 1000).astype(numpy.int32)
    dataset = chainer.datasets.TupleDataset(x, t)
    model = NestedClassifier(MLP()) if nested else L.Classifier(MLP())
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(dataset, 100, shuffle=False)
    updater = training.updaters.StandardUpdater(it, optimizer)
    return training.Trainer(updater, (iterations, 'iteration'), out=out)


def retained(unchain, nested, n, out):
    """Bytes traced after iteration n and 2n."""
    trainer = make_trainer(out, 2 * n, nested)
    kept = collections.deque(maxlen=100)

    @training.make_extension(trigger=(1, 'iteration'))
    def reader(trainer):
        value = trainer.observation['main/stats' if nested else 'main/loss']
        kept.append(value['loss'] if nested else value)

    sizes = {}

    @training.make_extension(
        trigger=(1, 'iteration'), priority=chainer_hookext.PRIORITY_LAST - 1)
    def probe(trainer):
        if trainer.updater.iteration in (n, 2 * n):
            gc.collect()
            current, _ = tracemalloc.get_traced_memory()
            sizes[trainer.updater.iteration] = current

    trainer.extend(reader)
    trainer.extend(probe)
    if unchain == 'chainer':
        trainer.extend(extensions.unchain_variables())
    elif unchain == 'ours':
        trainer.extend(chainer_hookext.UnchainVariables())
    tracemalloc.start()
    try:
        with chainer.using_config('keep_graph_on_report', True):
            trainer.run()
    finally:
        tracemalloc.stop()
    assert len(kept) == min(100, 2 * n)
    return sizes[n], sizes[2 * n]


def iteration_time(with_unchain, iterations, out):
    trainer = make_trainer(out, iterations, nested=False)
    if with_unchain:
        trainer.extend(chainer_hookext.UnchainVariables())
    start = time.perf_counter()
    trainer.run()
    return (time.perf_counter() - start) / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--n', type=int, default=40,
                        help='measure after N and 2N iterations')
    parser.add_argument('--timing-iterations', type=int, default=200)
    parser.add_argument('--rounds', type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix='bench_unchain_') as out:
        run(args, out)


def run(args, out):

    print('Retained memory (tracemalloc, MiB), keep_graph_on_report=True, '
          'last 100 losses kept, N={}'.format(args.n))
    print('{:<10} {:<26} {:>8} {:>8} {:>9} {:>10}'.format(
        'loss', 'unchain', 'N', '2N', 'growth', 'vs none'))
    names = (('none', 'none'), ('chainer', 'Chainer unchain_variables'),
             ('ours', 'UnchainVariables'))
    mib = 2.0 ** 20
    for nested in (False, True):
        leak = None
        for key, label in names:
            first, second = retained(key, nested, args.n, out)
            growth = second - first
            if leak is None:
                leak = growth
            print('{:<10} {:<26} {:>8.2f} {:>8.2f} {:>9.3f} {:>9.2f}%'.format(
                'nested' if nested else 'top-level', label, first / mib,
                second / mib, growth / mib, 100.0 * growth / leak))

    print()
    print('Flag off: us per iteration, best of {} rounds of {} iterations '
          '(runs alternate; "again" repeats the first to show the noise)'
          .format(args.rounds, args.timing_iterations))
    runs = (('no extension', False), ('UnchainVariables', True),
            ('no extension, again', False))
    times = [[] for _ in runs]
    iteration_time(False, 20, out)  # warm-up
    for _ in range(args.rounds):
        for samples, (_, with_unchain) in zip(times, runs):
            samples.append(
                iteration_time(with_unchain, args.timing_iterations, out))
    bare = min(times[0])
    for (label, _), samples in zip(runs, times):
        best = min(samples)
        print('{:<30} {:>10.1f} us  {:+.2f}%'.format(
            label, best * 1e6, 100.0 * (best / bare - 1)))
    ext = chainer_hookext.UnchainVariables()
    number = 200000
    trigger_s = min(timeit.repeat(
        lambda: ext.trigger(None), number=number, repeat=5)) / number
    print('{:<30} {:>10.3f} us  {:.3f}% of an iteration'.format(
        'its trigger alone', trigger_s * 1e6, 100.0 * trigger_s / bare))


if __name__ == '__main__':
    main()

#!/usr/bin/env python
"""ProfileReport's page: the seconds one write takes, by number of links.

A real ``Trainer`` trains a chain of ``--links`` small ``L.Linear`` links
(4-4, a ``relu`` between two, batch 8) for ``--iterations`` iterations with
every extension the page draws (``TimedLinks(functions=True, flops=True)``,
``LinkMemory``, ``TimedLoop``, ``Timeline``, ``ActivationStatistics``,
``GradientStatistics``) and a ``LogReport`` every iteration; then the page
is written again from the result folder (``profile.page.write``, what
``python -m chainer_hookext report`` does), ``--rounds`` times, and the
least wall and process CPU times are printed (``--pictures``: and the
seconds of each drawing function under ``cProfile``).  Warnings in the
page's writes are errors (matplotlib's "Tight layout not applied" fails
the run) unless ``--warnings``.

    python benchmarks/bench_page.py --links 10 100 1000
"""

import argparse
import os
import tempfile
import time
import warnings

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
from chainer import training
from chainer.training import extensions

import chainer_hookext
from chainer_hookext.profile import page
from chainer_hookext.profile import run as run_module


class Chain(chainer.ChainList):
    """``n`` links of ``L.Linear(4, 4)``, a relu between two."""

    def __init__(self, n):
        super().__init__(*[L.Linear(4, 4) for _ in range(n)])

    def forward(self, x):
        for i, link in enumerate(self):
            x = link(x) if i == 0 else link(F.relu(x))
        return x


def train(out, links, iterations):
    """Trains ``links`` links with every extension; returns ``out``."""
    model = L.Classifier(Chain(links))
    optimizer = chainer.optimizers.SGD(lr=0.01)
    optimizer.setup(model)
    rng = numpy.random.RandomState(0)
    dataset = chainer.datasets.TupleDataset(
        rng.randn(64, 4).astype(numpy.float32),
        rng.randint(0, 4, size=64).astype(numpy.int32))
    it = chainer.iterators.SerialIterator(dataset, 8)
    updater = training.updaters.StandardUpdater(it, optimizer)
    trainer = training.Trainer(updater, (iterations, 'iteration'), out=out)
    every = (1, 'iteration')
    trainer.extend(chainer_hookext.TimedLinks(functions=True, flops=True),
                   trigger=every)
    trainer.extend(chainer_hookext.LinkMemory(), trigger=every)
    trainer.extend(chainer_hookext.TimedLoop(), trigger=every)
    trainer.extend(chainer_hookext.Timeline(iterations=1),
                   trigger=(2, 'iteration'))
    trainer.extend(chainer_hookext.ActivationStatistics(), trigger=every)
    trainer.extend(chainer_hookext.GradientStatistics(), trigger=every)
    trainer.extend(extensions.LogReport(trigger=every))
    trainer.extend(chainer_hookext.ProfileReport(),
                   trigger=(iterations, 'iteration'))
    trainer.run()
    return out


def picture_seconds(run):
    """Returns ``{function: seconds}`` of each drawing function of
    ``chainer_hookext.plots`` in one page write, under ``cProfile``."""
    import cProfile
    import pstats
    profiler = cProfile.Profile()
    profiler.runcall(page.write, run)
    stats = pstats.Stats(profiler).stats
    plots_folder = os.path.dirname(page.__file__).replace(
        'profile', 'plots')
    return {name: row[3] for (path, _, name), row in stats.items()
            if path.startswith(plots_folder) and not name.startswith('_')
            and row[3] >= 0.01}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--links', type=int, nargs='+',
                        default=[10, 100, 1000])
    parser.add_argument('--iterations', type=int, default=4)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--pictures', action='store_true',
                        help='print the seconds of each picture')
    parser.add_argument('--warnings', action='store_true',
                        help='ignore warnings (an error by default)')
    args = parser.parse_args()
    warnings.simplefilter('ignore' if args.warnings else 'error')
    print(f"{'links':>6} {'wall (s)':>10} {'CPU (s)':>10} {'bytes':>10}")
    for links in args.links:
        with tempfile.TemporaryDirectory() as out:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')  # the page of the run
                train(out, links, args.iterations)
            run = run_module.from_folder(out)
            wall, cpu = [], []
            for _ in range(args.rounds):
                start, start_cpu = time.perf_counter(), time.process_time()
                path = page.write(run)
                wall.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            print(f'{links:>6} {min(wall):>10.2f} {min(cpu):>10.2f} '
                  f'{os.path.getsize(path):>10}')
            if args.pictures:
                for name, value in sorted(picture_seconds(run).items(),
                                          key=lambda kv: -kv[1]):
                    print(f'       {name:<14} {value:.2f}s (cProfile)')


if __name__ == '__main__':
    main()

#!/usr/bin/env python
"""Cost of GradientStatistics per backward step of a link's output, beside
ActivationStatistics' per forward output.

A chain of ``--links`` links, each multiplying its input by a constant (one
function node per call: one forward output, one backward step of that
output), runs forward and backward on N float32 elements.  Four variants
alternate in one run, best of ``--rounds``:

* off: nothing registered;
* ``ActivationStatisticsHook()``: statistics of each forward output;
* ``GradientStatisticsHook()``: statistics of the gradient w.r.t. each
  output (marking the output's node in forward, reading its gradient at its
  backward step), as ``GradientStatistics`` registers it;
* the floor of the second: ``ActivationStatisticsHook()`` with an empty
  ``chainer.FunctionHook`` beside it (the same statistics, and Chainer's
  calls of the function hook through which alone a gradient is seen).

Each hook's extra time per iteration over off, divided by the link calls,
is its cost per forward output or per backward step of a link's output;
the target: the second no more than the first.

``--instructions`` counts instead, for NumPy, the instructions per link
call under valgrind's cachegrind (one process per variant and count,
``PYTHONHASHSEED=0``, one BLAS thread): the difference between
``--iterations`` ``N1`` and ``N2``, free of the machine's noise.

Run: ``python benchmarks/bench_gradients.py [--device @cupy:0]
[--instructions]``
"""

import argparse
import concurrent.futures
import gc
import os
import shutil
import time

import chainer
import chainer.functions as F
import numpy

import _cachegrind  # benchmarks/, beside this script
from chainer_hookext import ActivationStatisticsHook
from chainer_hookext import GradientStatisticsHook


class Scale(chainer.Link):

    def forward(self, x):
        return x * 1.0


class Chain(chainer.ChainList):

    def __init__(self, links):
        super().__init__(*[Scale() for _ in range(links)])

    def forward(self, x):
        for link in self:
            x = link(x)
        return x


class ActivationBesideFunctionHook:
    """``ActivationStatisticsHook()`` with an empty ``chainer.FunctionHook``
    registered beside it: the floor of statistics of a link output's
    gradient, which only a function hook's backward step sees (the same
    statistics, and Chainer's calls of a function hook at every node)."""

    def __init__(self):
        self.hook = ActivationStatisticsHook()
        self.function_hook = chainer.FunctionHook()

    def set_scope(self, names):
        self.hook.set_scope(names)

    def statistics(self):
        return self.hook.statistics()

    def __enter__(self):
        self.function_hook.__enter__()
        self.hook.__enter__()
        return self

    def __exit__(self, *exc):
        self.hook.__exit__(*exc)
        self.function_hook.__exit__(*exc)


VARIANTS = [
    ('off', None),
    ('ActivationStatisticsHook()', ActivationStatisticsHook),
    ('GradientStatisticsHook()', GradientStatisticsHook),
    ('floor', ActivationBesideFunctionHook),
]


def synchronize(device):
    if device.xp is not numpy:
        device.device.synchronize()


def workload(args, device, n):
    """The chain, its names as a trainer's scope, and the input."""
    model = Chain(args.links)
    names = {id(link): f'main/{i}' for i, link in enumerate(model)}
    x = chainer.Variable(device.send(numpy.random.RandomState(0).randn(
        n).astype(numpy.float32)))
    return model, names, x


def measure(args, device, n):
    model, names, x = workload(args, device, n)

    def run(iterations):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(iterations):
            F.sum(model(x)).backward()
        synchronize(device)
        return (time.perf_counter() - start) / iterations

    def hooked(make, iterations):
        if make is None:
            return run(iterations)
        hook = make()
        hook.set_scope(names)  # as the trainer extensions scope it
        with hook:
            t = run(iterations)
            hook.statistics()  # the report: one copy per device
        return t

    per_iteration = max(hooked(make, 2) for _, make in VARIANTS)  # warm-up
    iterations = max(2, int(0.05 / per_iteration))
    best = {}
    for _ in range(args.rounds):
        for name, make in VARIANTS:
            t = hooked(make, iterations)
            best[name] = min(best.get(name, t), t)
    return {name: (t - best['off']) / args.links for name, t in best.items()}


def run_counted(args, n, variant, iterations):
    """One process's work under cachegrind: a warm-up iteration, then
    ``iterations`` under ``variant`` (its index in :data:`VARIANTS`)."""
    model, names, x = workload(args, chainer.get_device('@numpy'), n)
    make = VARIANTS[variant][1]
    hook = None if make is None else make()
    if hook is not None:
        hook.set_scope(names)
        hook.__enter__()
    # As bench_loop.py's: a full collection landing in one variant's counted
    # iterations and not in another's moved a variant by 5,000 to 9,000
    # instructions per link call.
    gc.collect()
    gc.freeze()
    for _ in range(1 + iterations):
        F.sum(model(x)).backward()


def count_instructions(args, n, variant, iterations):
    return _cachegrind.instructions(
        __file__, ['--links', args.links, '--run-counted', n, variant,
                   iterations],
        env={'OPENBLAS_NUM_THREADS': '1', 'OMP_NUM_THREADS': '1',
             'MKL_NUM_THREADS': '1'})


def measure_instructions(args, n):
    """``{variant: extra instructions per link call over off}``."""
    n1, n2 = args.iterations
    runs = [(v, k) for v in range(len(VARIANTS)) for k in (n1, n2)]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        refs = dict(zip(runs, pool.map(
            lambda run: count_instructions(args, n, *run), runs)))
    per_call = {name: (refs[v, n2] - refs[v, n1]) / (n2 - n1) / args.links
                for v, (name, _) in enumerate(VARIANTS)}
    return {name: count - per_call['off'] for name, count in per_call.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--device', default='@numpy')
    parser.add_argument('--links', type=int, default=16)
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument('--sizes', type=int, nargs='+',
                        default=[1024, 65536, 1048576])
    parser.add_argument('--instructions', action='store_true',
                        help='count instructions under valgrind (NumPy)')
    parser.add_argument('--iterations', type=int, nargs=2, default=[4, 12],
                        metavar=('N1', 'N2'),
                        help='iterations of the two counted runs')
    parser.add_argument('--run-counted', type=int, nargs=3,
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_counted:
        run_counted(args, *args.run_counted)
        return
    if args.instructions:
        if shutil.which('valgrind') is None:
            parser.error('--instructions: valgrind not found')
        n1, n2 = args.iterations
        print(f'Extra instructions over off per link call ({args.links} '
              f'links, forward and backward, NumPy, cachegrind: ({n2} - {n1} '
              f'iterations) / {n2 - n1})')
        table = [measure_instructions(args, n) for n in args.sizes]
        scale, fmt = 1, '>+14,.0f'
    else:
        device = chainer.get_device(args.device)
        print(f'Extra us over off per link call ({args.links} links, '
              f'forward and backward, best of {args.rounds} rounds, device '
              f'{device})')
        table = [measure(args, device, n) for n in args.sizes]
        scale, fmt = 1e6, '>+14.2f'
    print(f"{'hook':<34}" + ''.join(f"{f'N={n}':>14}" for n in args.sizes))
    for name, label in (
            ('ActivationStatisticsHook()', 'Activation, per forward output'),
            ('GradientStatisticsHook()', 'Gradient, per backward step'),
            ('floor', 'Floor: activation + FunctionHook')):
        print(f'{label:<34}' + ''.join(
            format(row[name] * scale, fmt) for row in table))
    for name, label in (('GradientStatisticsHook()', 'gradient'),
                        ('floor', 'floor')):
        ratio = f'ratio {label} / activation'
        print(f'{ratio:<34}' + ''.join(
            f"{row[name] / row['ActivationStatisticsHook()']:>13.2f}x"
            for row in table))


if __name__ == '__main__':
    main()

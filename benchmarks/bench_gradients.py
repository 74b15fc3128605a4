#!/usr/bin/env python
"""Cost of GradientStatistics per backward step of a link's output, beside
ActivationStatistics' per forward output.

A chain of ``--links`` links, each multiplying its input by a constant (one
function node per call: one forward output, one backward step of that
output), runs forward and backward on N float32 elements.  Three variants
alternate in one run, best of ``--rounds``:

* off: nothing registered;
* ``ActivationStatisticsHook()``: statistics of each forward output;
* ``GradientStatisticsHook()``: statistics of the gradient w.r.t. each
  output (marking the output's node in forward, reading its gradient at its
  backward step), as ``GradientStatistics`` registers it.

Each hook's extra time per iteration over off, divided by the link calls,
is its cost per forward output or per backward step of a link's output;
the target: the second no more than the first.

Run: ``python benchmarks/bench_gradients.py [--device @cupy:0]``
"""

import argparse
import time

import chainer
import chainer.functions as F
import numpy

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


VARIANTS = [
    ('off', None),
    ('ActivationStatisticsHook()', ActivationStatisticsHook),
    ('GradientStatisticsHook()', GradientStatisticsHook),
]


def synchronize(device):
    if device.xp is not numpy:
        device.device.synchronize()


def measure(args, device, n):
    model = Chain(args.links)
    names = {id(link): 'main/{}'.format(i) for i, link in enumerate(model)}
    x = chainer.Variable(device.send(numpy.random.RandomState(0).randn(
        n).astype(numpy.float32)))

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--device', default='@numpy')
    parser.add_argument('--links', type=int, default=16)
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument('--sizes', type=int, nargs='+',
                        default=[1024, 65536, 1048576])
    args = parser.parse_args()
    device = chainer.get_device(args.device)
    print('Extra us over off per link call ({} links, forward and backward, '
          'best of {} rounds, device {})'.format(
              args.links, args.rounds, device))
    print('{:<34}'.format('hook') + ''.join(
        '{:>14}'.format('N={}'.format(n)) for n in args.sizes))
    table = [measure(args, device, n) for n in args.sizes]
    for name, label in (
            ('ActivationStatisticsHook()', 'Activation, per forward output'),
            ('GradientStatisticsHook()', 'Gradient, per backward step')):
        print('{:<34}'.format(label) + ''.join(
            '{:>+14.2f}'.format(row[name] * 1e6) for row in table))
    print('{:<34}'.format('ratio gradient / activation') + ''.join(
        '{:>13.2f}x'.format(row['GradientStatisticsHook()']
                            / row['ActivationStatisticsHook()'])
        for row in table))


if __name__ == '__main__':
    main()

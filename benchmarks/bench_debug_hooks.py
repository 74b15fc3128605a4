#!/usr/bin/env python
"""Per-link-call overhead of the debugging hooks, against an empty hook.

Each hook is registered globally and scoped to the model's links, as the
trainer extensions register it, beside no hook and an empty
:class:`chainer.LinkHook`: ``NonFiniteHook`` (forward only, and with its
backward function hook), ``ActivationStatisticsHook`` and
``CaptureOutputsHook``.

1. Training step: a chain of ``--layers`` Linear layers (64 units, batch
   32) with ReLU between them does forward and backward.  Each hook's extra
   time over the empty hook is divided by the link calls in one iteration
   (the layers and the chain).  Runs of about 20 ms alternate between the
   variants; best of ``--rounds``.
2. One link call, forward only, by output size: an identity link returns a
   Variable of N float32 elements; the extra time per call over the empty
   hook is the cost of the hook's work on one output of that size.

Run: ``python benchmarks/bench_debug_hooks.py [--device @cupy:0]``
"""

import argparse
import time
import timeit

import chainer
import chainer.functions as F
import chainer.links as L
import numpy

from chainer_hookext import ActivationStatisticsHook
from chainer_hookext import CaptureOutputsHook
from chainer_hookext import NonFiniteHook


class Deep(chainer.ChainList):

    def __init__(self, layers, units):
        super().__init__(*[L.Linear(units, units) for _ in range(layers)])

    def forward(self, x):
        for link in self[:-1]:
            x = F.relu(link(x))
        return self[-1](x)


class Identity(chainer.Link):

    def forward(self, x):
        return x


class EmptyHook(chainer.LinkHook):
    name = 'EmptyHook'


VARIANTS = [
    ('no hook', None),
    ('empty hook', EmptyHook),
    ('NonFiniteHook(backward=False)', lambda: NonFiniteHook(backward=False)),
    ('NonFiniteHook()', NonFiniteHook),
    ('ActivationStatisticsHook()', ActivationStatisticsHook),
    ('CaptureOutputsHook()', CaptureOutputsHook),
]


def hooked(make, model, fn):
    """Runs ``fn()`` with the hook made by ``make`` scoped to ``model``."""
    hook = None if make is None else make()
    if hasattr(hook, 'set_scope'):
        hook.set_scope({id(link): 'main' + path
                        for path, link in model.namedlinks()})
    if hook is None:
        return fn()
    with hook:
        result = fn()
        if hasattr(hook, 'check'):
            hook.check()
    return result


def synchronize(device):
    if device.xp is not numpy:
        device.device.synchronize()


def training_step(args, device):
    model = Deep(args.layers, 64)
    model.to_device(device)
    x = device.send(numpy.random.RandomState(0).randn(
        32, 64).astype(numpy.float32))

    def run(iterations):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(iterations):
            loss = F.sum(model(x))
            model.cleargrads()
            loss.backward()
        synchronize(device)
        return (time.perf_counter() - start) / iterations

    best = {}
    for name, make in VARIANTS:  # warm-up
        per_iteration = hooked(make, model, lambda: run(2))
    iterations = max(2, int(0.02 / per_iteration))
    for _ in range(args.rounds):
        for name, make in VARIANTS:
            t = hooked(make, model, lambda: run(iterations))
            best[name] = min(best.get(name, t), t)
    calls = args.layers + 1
    print('\n1. Training step: {} Linear 64x64, batch 32, {} link calls / '
          'iteration, device {}'.format(args.layers, calls, device))
    print('{:<32} {:>10} {:>16} {:>9}'.format(
        'hook', 'us / iter', 'us / link call', 'vs empty'))
    for name, _ in VARIANTS:
        extra = '-' if name == 'no hook' else '{:+.2f}'.format(
            (best[name] - best['empty hook']) / calls * 1e6)
        print('{:<32} {:>10.1f} {:>16} {:>8.2f}x'.format(
            name, best[name] * 1e6, extra,
            best[name] / best['empty hook']))


def one_call(args, device, sizes):
    link = Identity()
    print('\n2. One forward link call: extra us over the empty hook, by '
          'output size (float32), device {}'.format(device))
    print('{:<32}'.format('hook') + ''.join(
        '{:>12}'.format('N={}'.format(n)) for n in sizes))
    table = {name: [] for name, _ in VARIANTS}
    for n in sizes:
        x = chainer.Variable(device.send(
            numpy.random.RandomState(0).randn(n).astype(numpy.float32)))
        number = max(20, int(2e6 // (n + 2000)))

        def per_call():
            for _ in range(5):
                link(x)  # warm-up
            synchronize(device)
            t = min(timeit.repeat(lambda: link(x), number=number,
                                  repeat=args.rounds // 3 + 1)) / number
            synchronize(device)
            return t
        for name, make in VARIANTS:
            table[name].append(hooked(make, link, per_call))
    for name, _ in VARIANTS[2:]:
        print('{:<32}'.format(name) + ''.join(
            '{:>+12.2f}'.format((t - e) * 1e6)
            for t, e in zip(table[name], table['empty hook'])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--device', default='@numpy')
    parser.add_argument('--layers', type=int, default=16)
    parser.add_argument('--rounds', type=int, default=25)
    args = parser.parse_args()
    device = chainer.get_device(args.device)
    training_step(args, device)
    one_call(args, device, (1024, 65536, 1048576))


if __name__ == '__main__':
    main()

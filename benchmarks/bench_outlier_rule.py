#!/usr/bin/env python
"""Timeline(outliers=...): the microseconds one iteration's judging takes.

Each iteration ended is judged by ``_timeline_outliers.OutlierRule``: its
phases summed (``phase_seconds``), the update and each extension called
set against its running median, then added to it.  This times that alone,
on ``--iterations`` made-up iterations (five update phases of random
length, ``--every`` extensions called at each, four more at every 15th:
an epoch's end), ``--rounds`` times, and prints the least microseconds
per iteration.

    python benchmarks/bench_outlier_rule.py --every 1 6
"""

import argparse
import random
import time
import types

from chainer_hookext.extensions import _timeline_outliers
from chainer_hookext.timing import phases

UPDATE = ('data', 'forward', 'backward', 'optimizer', 'other')
EVERY = ('LogReport', 'PlotReport', 'PlotReport_1', 'PrintReport',
         'ProgressBar', 'UnchainVariables')
EPOCH = ('validation', 'TimedLinks', 'TimedLoop', 'snapshot')


def made_up(number, called, rng):
    """An ended iteration whose phases are ``UPDATE``, then ``called``."""
    spans, t = [], 0.0
    for phase in UPDATE + tuple(phases.ExtensionPhase(n) for n in called):
        end = t + 0.001 * rng.random()
        spans.append(phases.Span(phase, t, end))
        t = end
    piece = types.SimpleNamespace(pauses=[], phase_spans=spans)
    return _timeline_outliers.Iteration(number, 0.0, t, piece, t)


def judge_all(iterations):
    rule = _timeline_outliers.OutlierRule(_timeline_outliers.FACTOR, 10)
    left_out = phases.ExtensionPhase('Timeline')
    previous = None
    start = time.perf_counter()
    for iteration in iterations:
        rule.judge(iteration, previous, left_out)
        previous = iteration
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--every', type=int, nargs='+', default=[1, 6])
    parser.add_argument('--iterations', type=int, default=3000)
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(0)
    for every in args.every:
        called = EVERY[:every]
        iterations = [
            made_up(i, called + (EPOCH if i % 15 == 0 else ()), rng)
            for i in range(1, args.iterations + 1)]
        best = min(judge_all(iterations) for _ in range(args.rounds))
        print(f'{every} extension(s) every iteration, {len(EPOCH)} more '
              f'every 15th: {best / len(iterations) * 1e6:.1f} us per '
              'iteration')


if __name__ == '__main__':
    main()

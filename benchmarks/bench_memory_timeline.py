"""A traced iteration with and without ``Timeline(memory=True)``.

Trains the same MLP (784-100-100-10, batch 32) and small CNN under a
``Timeline`` tracing every iteration, with and without memory counters,
side by side, and prints the ratio of the CPU seconds (this process's, less
sensitive to a shared machine's load) per traced iteration
(the median of several alternating runs).  Budget: at most 1.10.

    python benchmarks/bench_memory_timeline.py
"""

import os
import statistics
import sys
import tempfile
import time

import chainer
import chainer.links as L
import numpy
from chainer import training

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import chainer_hookext  # noqa: E402
from tests.memory.test_agreement import CNN  # noqa: E402
from tests.memory.test_agreement import MLP  # noqa: E402

ITERATIONS = 40


def seconds_per_iteration(predictor, shape, memory):
    model = L.Classifier(predictor())
    rng = numpy.random.RandomState(0)
    x = rng.rand(32 * ITERATIONS, *shape).astype(numpy.float32)
    t = rng.randint(0, 10, 32 * ITERATIONS).astype(numpy.int32)
    it = chainer.iterators.SerialIterator(
        chainer.datasets.TupleDataset(x, t), 32)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    with tempfile.TemporaryDirectory() as out:
        trainer = training.Trainer(
            training.updaters.StandardUpdater(it, optimizer),
            (ITERATIONS + 1, 'iteration'), out=out)
        trainer.extend(chainer_hookext.Timeline(
            iterations=ITERATIONS, memory=memory, compress=False),
            trigger=(10 ** 6, 'iteration'))
        start = time.process_time()
        trainer.run()
        return (time.process_time() - start) / ITERATIONS


def main():
    for name, predictor, shape in (('MLP', lambda: MLP(100), (784,)),
                                   ('CNN', CNN, (1, 28, 28))):
        seconds_per_iteration(predictor, shape, False)  # warm-up
        without, with_ = [], []
        for _ in range(5):
            without.append(seconds_per_iteration(predictor, shape, False))
            with_.append(seconds_per_iteration(predictor, shape, True))
        off, on = statistics.median(without), statistics.median(with_)
        print(f'{name}: traced iteration {off * 1e3:.3f} ms without, '
              f'{on * 1e3:.3f} ms with memory counters: ratio '
              f'{on / off:.3f}')


if __name__ == '__main__':
    main()

"""Shared set-up of the worker scripts run under ``mpiexec``.

Import it first, before ``chainer_hookext``: warnings are errors, as in the
test suite (setup.cfg), with the same exception for Chainer's import of
``numpy.distutils``; and ``time.perf_counter`` is :data:`CLOCK`, a fake
clock, so that timed figures are exact (see :class:`FakeClock`).
"""

import contextlib
import io
import json
import os
import sys
import time
import warnings

warnings.filterwarnings('error')
warnings.filterwarnings(
    'ignore', r'\s*`numpy.distutils` is deprecated', DeprecationWarning)
warnings.filterwarnings(
    'ignore', 'msvccompiler is deprecated', DeprecationWarning)
# pkg_resources (imported by Chainer) warns with setuptools 67.5 and later,
# as setup.cfg's filters say.
warnings.filterwarnings(
    'ignore', 'pkg_resources is deprecated as an API', DeprecationWarning)
warnings.filterwarnings(
    'ignore', r'Deprecated call to `pkg_resources\.declare_namespace',
    DeprecationWarning)

import chainer  # NOQA: E402
import chainer.functions as F  # NOQA: E402
import chainer.links as L  # NOQA: E402
import chainermn  # NOQA: E402
import numpy  # NOQA: E402
from chainer import training  # NOQA: E402


class FakeClock:
    """A clock that stands still until :meth:`sleep` moves it on.

    Installed as ``time.perf_counter`` after Chainer is imported (the
    trainer's ``elapsed_time`` keeps the real clock) and before
    ``chainer_hookext``, whose timers bind ``time.perf_counter`` when
    imported: a link call then takes exactly the seconds it "slept", and
    nothing else takes any time.  A patch of the whole module, done here
    once, because each worker is a process of its own.
    """

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


CLOCK = FakeClock()
time.perf_counter = CLOCK


class DelayedLinear(L.Linear):
    """A Linear link that takes ``delay`` seconds of :data:`CLOCK` per call.
    """

    def __init__(self, *args, delay=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.delay = delay

    def forward(self, x):
        CLOCK.sleep(self.delay)
        return super().forward(x)


class MLP(chainer.Chain):

    def __init__(self, n_in=4, n_units=8, n_out=3, delay=0.0):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(n_in, n_units)
            self.l2 = DelayedLinear(n_units, n_out, delay=delay)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def setup():
    """Returns ``(comm, out)``: the naive communicator and the output dir."""
    comm = chainermn.create_communicator('naive')
    return comm, sys.argv[1]


def make_trainer(comm, out, stop=(4, 'iteration'), batchsize=4, n=32,
                 evaluator=True, delay=0.0):
    """ChainerMN's example layout on a tiny ``L.Classifier(MLP())``.

    The multi-node optimizer, the dataset made on rank 0 and scattered, one
    ``StandardUpdater`` per rank, and a multi-node evaluator.  With ``n=32``
    and two ranks, each rank has 16 examples: 4 iterations per epoch.
    ``delay`` makes ``predictor/l2`` take that long per call.
    """
    chainer.global_config.train = True
    model = L.Classifier(MLP(delay=delay))
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=0.01), comm)
    optimizer.setup(model)
    train = test = None
    if comm.rank == 0:
        rng = numpy.random.RandomState(0)
        x = rng.randn(n, 4).astype(numpy.float32)
        t = rng.randint(0, 3, size=n).astype(numpy.int32)
        train = chainer.datasets.TupleDataset(x, t)
        test = chainer.datasets.TupleDataset(x[:8], t[:8])
    train = chainermn.scatter_dataset(train, comm, shuffle=True, seed=0)
    test = chainermn.scatter_dataset(test, comm)
    it = chainer.iterators.SerialIterator(train, batchsize, shuffle=False)
    updater = training.updaters.StandardUpdater(it, optimizer)
    trainer = training.Trainer(updater, stop, out=out)
    if evaluator:
        test_it = chainer.iterators.SerialIterator(
            test, batchsize, repeat=False, shuffle=False)
        trainer.extend(chainermn.create_multi_node_evaluator(
            training.extensions.Evaluator(test_it, model), comm))
    return trainer, model


def save(comm, out, result):
    """Writes this rank's ``result`` (JSON) for the test to read."""
    path = os.path.join(out, 'rank{}.json'.format(comm.rank))
    with open(path + '.tmp', 'w') as f:
        json.dump(result, f)
    os.replace(path + '.tmp', path)


def run_and_read_log(trainer):
    """Runs ``trainer``; returns what it printed and its ``LogReport``'s
    entries."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trainer.run()
    with open(os.path.join(trainer.out, 'log')) as f:
        return printed.getvalue(), json.load(f)


def select(log, keep):
    """The log's entries, each with the keys for which ``keep(key)``."""
    return [{k: v for k, v in entry.items() if keep(k)} for entry in log]


def hooks_left(model):
    """Names of the link and function hooks still registered: global ones
    and those of ``model``'s links."""
    left = list(chainer._get_link_hooks().values())
    left += list(chainer.get_function_hooks().values())
    for link in model.links():
        left.extend(link.local_link_hooks.values())
    return [hook.name for hook in left]

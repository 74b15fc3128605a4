import itertools
import time

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training


def pytest_addoption(parser):
    parser.addoption(
        '--runslow', action='store_true', default=False,
        help='also run tests marked slow (end-to-end runs)')


def pytest_collection_modifyitems(config, items):
    skip_slow = pytest.mark.skip(reason='slow: run with --runslow')
    skip_gpu = pytest.mark.skip(reason='gpu: needs CuPy and a CUDA device')
    gpu = chainer.backends.cuda.available
    for item in items:
        if 'slow' in item.keywords and not config.getoption('--runslow'):
            item.add_marker(skip_slow)
        if 'gpu' in item.keywords and not gpu:
            item.add_marker(skip_gpu)


class MLP(chainer.Chain):

    def __init__(self, n_in=4, n_units=8, n_out=3):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(n_in, n_units)
            self.l2 = L.Linear(n_units, n_out)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


class SleepBackward(chainer.FunctionNode):
    """Identity whose backward sleeps ``seconds``: a known backward cost."""

    def __init__(self, seconds):
        self.seconds = seconds

    def forward(self, inputs):
        return inputs

    def backward(self, indexes, grad_outputs):
        time.sleep(self.seconds)
        return grad_outputs


def data(xp=numpy, n=2):
    """A batch ``(x, t)`` for :class:`MLP` in a classifier, on ``xp``."""
    return xp.zeros((n, 4), numpy.float32), xp.zeros(n, numpy.int32)


def make_dataset(n=32, n_in=4, n_out=3, seed=0):
    rng = numpy.random.RandomState(seed)
    x = rng.randn(n, n_in).astype(numpy.float32)
    t = rng.randint(0, n_out, size=n).astype(numpy.int32)
    return chainer.datasets.TupleDataset(x, t)


def make_trainer(out, stop=(4, 'iteration'), model=None, batchsize=8,
                 evaluator=False, device=-1):
    """A real Trainer on a tiny L.Classifier(MLP()) model."""
    if model is None:
        model = L.Classifier(MLP())
    if device != -1:
        model.to_device(device)
    optimizer = chainer.optimizers.SGD(lr=0.01)
    optimizer.setup(model)
    dataset = make_dataset()
    it = chainer.iterators.SerialIterator(dataset, batchsize, shuffle=False)
    updater = training.updaters.StandardUpdater(it, optimizer, device=device)
    trainer = training.Trainer(updater, stop, out=str(out))
    if evaluator:
        test_it = chainer.iterators.SerialIterator(
            make_dataset(16, seed=1), batchsize, repeat=False, shuffle=False)
        trainer.extend(training.extensions.Evaluator(
            test_it, model, device=device))
    return trainer


def registered_hooks(model):
    """Every hook left anywhere: the thread's registry and links' own."""
    found = list(chainer._get_link_hooks().values())
    for link in model.links():
        found.extend(link.local_link_hooks.values())
    return found


@pytest.fixture
def trainer_factory(tmp_path):
    def factory(**kwargs):
        kwargs.setdefault('out', tmp_path / 'result')
        return make_trainer(**kwargs)
    return factory


#: The fake clock's tick: exact in binary, so sums of ticks compare exactly.
TICK = 2 ** -10


@pytest.fixture
def clock(monkeypatch):
    """Fakes the timers' clocks: each read advances one :data:`TICK`.

    Patches the forward and backward clocks of
    :class:`~chainer_hookext.TimerHook` and Chainer's own ``TimerHook``'s.
    Returns a function that restarts the clock at 0.
    """
    from chainer.link_hooks import timer as chainer_timer
    from chainer_hookext.link_hooks._timer import backward
    from chainer_hookext.link_hooks._timer import call_stack

    state = {}

    def reset():
        ticks = itertools.count()
        state['read'] = lambda: next(ticks) * TICK
    reset()

    def read():
        return state['read']()
    for module, name in ((call_stack, '_perf_counter'),
                         (backward, '_perf_counter'),
                         (chainer_timer, '_get_time')):
        monkeypatch.setattr(module, name, read)
    return reset


class Boom(Exception):
    """The exception the tests raise on purpose."""


def raise_boom(*args, **kwargs):
    """Raises :class:`Boom`; stands in for any function or method."""
    raise Boom('boom')


class FailingInit(training.Extension):
    """Extension whose ``initialize`` raises :class:`Boom`.

    ``Trainer.run`` calls ``initialize`` outside its ``try``: the way out
    that skips ``on_error`` and ``finalize``.
    """

    def initialize(self, trainer):
        raise Boom('initialize')

    def __call__(self, trainer):
        pass


def occurrences(summary):
    """``{key: occurrence}`` of a ``TimerHook`` or ``TimedLinks`` summary."""
    return {key: entry['occurrence'] for key, entry in summary.items()}


class FakeComm:
    """One rank of a ChainerMN communicator, in one process, without MPI.

    The other ranks "sent" ``others`` (one object each, in rank order):
    :meth:`gather_obj` on the root returns them with this rank's object at
    its place.  ``gathered`` keeps what this rank gave.
    """

    def __init__(self, rank, others):
        self.rank = rank
        self.size = len(others) + 1
        self.others = others
        self.gathered = []

    def gather_obj(self, obj, root=0):
        self.gathered.append(obj)
        if self.rank != root:
            return None
        per_rank = list(self.others)
        per_rank.insert(self.rank, obj)
        return per_rank


class StillClock(object):
    """A clock that stands still but for :meth:`sleep`: exact figures."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    def __deepcopy__(self, memo):  # ParallelUpdater's copies share it
        return self


@pytest.fixture
def still(monkeypatch):
    """Every timer of the package on one :class:`StillClock`."""
    from chainer_hookext.extensions._loop import phases
    from chainer_hookext.extensions._timeline import link_spans
    from chainer_hookext.link_hooks._timer import backward
    from chainer_hookext.link_hooks._timer import call_stack

    clock = StillClock()
    for module in (phases, link_spans, backward, call_stack):
        monkeypatch.setattr(module, '_perf_counter', clock)
    return clock


# Known delays, exact in binary.
DATA, FORWARD, BACKWARD, OPTIMIZER, SLOW = 1.0, 2.0, 4.0, 8.0, 16.0


class SlowModel(chainer.Chain):
    """A classifier whose forward and backward take known times."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        with self.init_scope():
            self.predictor = MLP()

    def forward(self, x, t):
        self.clock.sleep(FORWARD)
        y = _SleepingBackward(self.clock).apply((self.predictor(x),))[0]
        return F.softmax_cross_entropy(y, t)


class _SleepingBackward(chainer.FunctionNode):
    def __init__(self, clock):
        self.clock = clock

    def forward(self, inputs):
        return inputs

    def backward(self, indexes, grad_outputs):
        self.clock.sleep(BACKWARD)
        return grad_outputs


class SlowIterator(chainer.iterators.SerialIterator):
    def __init__(self, clock, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock = clock

    def __next__(self):
        self.clock.sleep(DATA)
        return super().__next__()

    next = __next__


def make_slow_trainer(still, tmp_path, stop=4, updater=None):
    """A Trainer whose phases take known times on the still clock."""
    model = SlowModel(still)
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    optimizer.add_hook(lambda opt: still.sleep(OPTIMIZER), name='slow')
    it = SlowIterator(still, make_dataset(), 8, shuffle=False)
    updater = (updater or training.updaters.StandardUpdater)(it, optimizer)
    trainer = training.Trainer(
        updater, (stop, 'iteration'), out=str(tmp_path / 'result'))

    # Before TimedLoop (PRIORITY_WRITER): reported in the same iteration.
    @training.make_extension(trigger=(2, 'iteration'),
                             priority=training.PRIORITY_WRITER + 1)
    def slow(trainer):
        still.sleep(SLOW)
    trainer.extend(slow, name='slow')
    return trainer

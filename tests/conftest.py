import gc
import itertools
import time

import chainer
import chainer.function_hooks  # NOQA: F401 (CHAINER_OBJECTS)
import chainer.functions as F
import chainer.link_hooks  # NOQA: F401
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


class MaskedMLP(MLP):
    """``l2(relu(l1(x)) * mask)``: a dropout-like mask the model makes in
    its forward and gives to ``F.mul`` (LinkMemory counts what it keeps).
    """

    def forward(self, x):
        h = F.relu(self.l1(x))
        mask = (self.xp.random.rand(*h.shape) > 0.5).astype(h.dtype)
        return self.l2(h * mask)


class SleepBackward(chainer.FunctionNode):
    """Identity whose backward sleeps ``seconds``: a known backward cost."""

    def __init__(self, seconds):
        self.seconds = seconds

    def forward(self, inputs):
        return inputs

    def backward(self, indexes, grad_outputs):
        time.sleep(self.seconds)
        return grad_outputs


class Twice(chainer.FunctionNode):
    """Doubles its input: a function type without a FLOP formula."""

    def forward(self, inputs):
        return inputs[0] * 2,

    def backward(self, indexes, grad_outputs):
        return Twice().apply(grad_outputs)


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


def hook_keys(registry):
    """The keys of a registry's hooks, each of the package's by its key
    under the package's one entry there (``_observer``), in call order."""
    from chainer_hookext import _observer
    from chainer_hookext import _registry
    keys = []
    for key in registry:
        if key == _observer.KEY:
            keys.extend(_registry.registered(registry))
        else:
            keys.append(key)
    return keys


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

    Patches the package's one clock (:data:`chainer_hookext.timing.clock.now`)
    and Chainer's own ``TimerHook``'s.  Returns a function that restarts the
    clock at 0.
    """
    from chainer.link_hooks import timer as chainer_timer
    from chainer_hookext.timing import clock as timing_clock

    state = {}

    def reset():
        ticks = itertools.count()
        state['read'] = lambda: next(ticks) * TICK
    reset()

    def read():
        return state['read']()
    monkeypatch.setattr(timing_clock, 'now', read)
    monkeypatch.setattr(chainer_timer, '_get_time', read)
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
    from chainer_hookext.timing import clock as timing_clock

    clock = StillClock()
    monkeypatch.setattr(timing_clock, 'now', clock)
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
        x = SlowNode(self.clock, forward=FORWARD).apply((x,))[0]
        y = SlowNode(self.clock, backward=BACKWARD).apply(
            (self.predictor(x),))[0]
        return F.softmax_cross_entropy(y, t)


class SlowNode(chainer.FunctionNode):
    """Identity whose forward and backward take known seconds on a
    :class:`StillClock`; its backward applies ``inner`` (a node) to the
    gradient when given, as Chainer's backward methods apply gradient
    nodes.  Differentiable twice."""

    def __init__(self, clock, forward=0.0, backward=0.0, inner=None):
        self.clock = clock
        self.forward_seconds = forward
        self.backward_seconds = backward
        self.inner = inner

    def forward(self, inputs):
        self.clock.sleep(self.forward_seconds)
        return inputs

    def backward(self, indexes, grad_outputs):
        self.clock.sleep(self.backward_seconds)
        if self.inner is not None:
            return self.inner.apply(grad_outputs)
        return grad_outputs


class SlowIterator(chainer.iterators.SerialIterator):
    def __init__(self, clock, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock = clock

    def __next__(self):
        self.clock.sleep(DATA)
        return super().__next__()

    next = __next__


def loop_log(trainer):
    """``TimedLoop``'s figures in each of the trainer's ``LogReport``
    entries, keyed after ``time/loop/``."""
    return [{k[len('time/loop/'):]: v for k, v in e.items()
             if k.startswith('time/loop/')}
            for e in trainer.get_extension('LogReport').log]


def observe(trainer, suffix):
    """Returns a list that gets, at each iteration's end (after the
    writers), the trainer's observed values whose keys end with
    ``suffix``."""
    reports = []

    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_READER)
    def read(trainer):
        reports.append({k: v for k, v in trainer.observation.items()
                        if k.endswith(suffix)})
    trainer.extend(read)
    return reports


def snapshot_of(trainer):
    """The trainer's state, as a snapshot holds it."""
    target = {}
    trainer.serialize(chainer.serializers.DictionarySerializer(target))
    return target


def run_timed(trainer, every=2, snapshot=None, **kwargs):
    """Runs ``trainer`` with a ``TimedLoop(**kwargs)`` and a ``LogReport``,
    each every ``every`` iterations, resumed from ``snapshot``
    (:func:`snapshot_of`) when given.

    Returns:
        tuple: The ``TimedLoop`` and :func:`loop_log`.
    """
    from chainer.training import extensions
    from chainer_hookext import TimedLoop

    timed = TimedLoop(**kwargs)
    trainer.extend(timed, trigger=(every, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(every, 'iteration')))
    if snapshot is not None:
        chainer.serializers.NpzDeserializer(snapshot).load(trainer)
    trainer.run()
    return timed, loop_log(trainer)


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


# -- nothing of the user's or of Chainer's changed ----------------------------

#: Chainer's modules and classes whose attributes must stay as they are.
CHAINER_OBJECTS = (
    chainer, chainer.Variable, chainer.Parameter, chainer.Link,
    chainer.Chain, chainer.ChainList, chainer.FunctionNode,
    chainer.Optimizer, chainer.optimizer.GradientMethod,
    chainer.optimizers.SGD, chainer.iterators.SerialIterator,
    training.Trainer, training.updaters.StandardUpdater,
    training.updaters.ParallelUpdater, chainer.Reporter,
    chainer.link_hooks, chainer.function_hooks, chainer.dataset,
    chainer.functions, chainer.links)


def attributes_in_a_dict(obj, missing=object()):
    """Whether ``obj``'s attributes were moved into a dict of their own: on
    Python 3.11 ``vars(obj)`` does that, and every later read of one is
    slower.  Kept in place, its attributes are its own GC referents."""
    return any(type(r) is dict and r and all(
        type(k) is str and getattr(obj, k, missing) is v for k, v in r.items())
        for r in gc.get_referents(obj))


def _attributes(obj):
    # {name: value}: identity is what is compared.
    return dict(vars(obj))


class UserState(object):
    """Everything a trainer's run might touch, to compare before and after:
    the attributes of the model's links, the optimizers (and their hook
    lists), the iterators, the updater, the trainer and its reporter and
    extension entries, Chainer's modules and classes, the thread's link
    and function hooks, and ``gc.callbacks`` (the process's: not with
    ``process=False``, for a trainer beside others in other threads)."""

    def __init__(self, trainer, process=True):
        self.trainer = trainer
        self.objects = self._objects(trainer)
        self.attributes = [_attributes(o) for o in self.objects]
        self.hooks = self._hooks(trainer)
        self.gc_callbacks = list(gc.callbacks) if process else None

    @staticmethod
    def _objects(trainer):
        updater = trainer.updater
        objects = [trainer, trainer.reporter, updater]
        objects.extend(trainer._extensions.values())
        objects.extend(updater.get_all_optimizers().values())
        objects.extend(updater._iterators.values())
        for optimizer in updater.get_all_optimizers().values():
            objects.extend(optimizer.target.links())
        objects.extend(getattr(updater, '_models', {}).values())
        objects.extend(CHAINER_OBJECTS)
        return objects

    @staticmethod
    def _hooks(trainer):
        hooks = [list(chainer._get_link_hooks().items()),
                 list(chainer.get_function_hooks().items())]
        for optimizer in trainer.updater.get_all_optimizers().values():
            hookable = optimizer._hookable
            hooks.append(list(hookable._pre_update_hooks.items()))
            hooks.append(list(hookable._post_update_hooks.items()))
            for link in optimizer.target.links():
                local = vars(link).get('_local_link_hooks') or {}
                hooks.append(list(local.items()))
        return hooks

    def changes(self):
        """Returns what differs from when this object was made: an
        attribute added or removed (but for what training itself adds), a
        callable replaced, or anything of this package's left."""
        found = []
        for obj, before in zip(self.objects, self.attributes):
            after = _attributes(obj)
            for name in set(before) | set(after):
                old, new = before.get(name, _ABSENT), after.get(name, _ABSENT)
                if old is new or name in _TRAINING_ADDS:
                    continue
                if old is _ABSENT or new is _ABSENT or _is_ours(new) or (
                        callable(old) and not isinstance(old, chainer.Link)):
                    found.append('{!r}.{}'.format(type(obj), name))
        if self._hooks(self.trainer) != self.hooks:
            found.append('hook registries')
        if self.gc_callbacks is not None and (
                gc.callbacks != self.gc_callbacks):
            found.append('gc.callbacks')
        return found


_ABSENT = object()
#: Attributes that training adds or rebuilds without any extension.
_TRAINING_ADDS = frozenset((
    'observation', '_done', '_final_elapsed_time', '_start_at',
    '_snapshot_elapsed_time', '_previous_epoch_detail', '_state',
    '_loss_scaling_isnan', '_local_link_hooks', '_grad', '_grad_var'))


def _is_ours(value):
    return type(value).__module__.startswith('chainer_hookext')


@pytest.fixture
def user_state():
    """``user_state(trainer)`` records; ``.changes()`` lists differences."""
    return UserState


#: The first bytes of every PNG file.
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def assert_png(figure):
    """Asserts ``figure`` is a matplotlib Figure that draws into a PNG of
    some size; returns the bytes."""
    from matplotlib import figure as figure_module

    from chainer_hookext import plots
    assert isinstance(figure, figure_module.Figure)
    data = plots.png(figure)
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 5000
    return data


def bar_heights(ax):
    """The heights of each bar container of ``ax``, by its label."""
    return {c.get_label(): [p.get_height() for p in c.patches]
            for c in ax.containers}


@pytest.fixture(autouse=True, scope='session')
def peaks_file(tmp_path_factory):
    """The roofline's peaks kept in a file of the session's, never in the
    user's cache (``chainer_hookext.costs.peaks.cache_path``)."""
    path = tmp_path_factory.mktemp('peaks') / 'peaks.json'
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('CHAINER_HOOKEXT_PEAKS', str(path))
        yield path

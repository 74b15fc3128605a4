"""TimerHook(backward=True): backward time per link."""

import gc
import io
import time
import tracemalloc
import weakref

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer.backends import cuda
from chainer.function_hooks import timer as chainer_function_timer

from chainer_hookext import TimerHook
from chainer_hookext.timing import clock as timing_clock
from tests.conftest import MLP
from tests.conftest import SleepBackward
from tests.conftest import TICK
from tests.conftest import data
from tests.conftest import hook_keys


PATHS = ['/', '/predictor', '/predictor/l1', '/predictor/l2']


def field(summary, name, scale=TICK):
    return {key: entry[name] / scale for key, entry in summary.items()}


def train(hook, model, iterations=1, xp=numpy, outside=False):
    """Forward and backward of ``L.Classifier`` with the hook registered.

    ``outside`` adds a backward through ``F.sum(model.predictor(x))``: one
    step of a node created outside the links.
    """
    x, t = data(xp)
    with hook:
        for _ in range(iterations):
            loss = model(x, t)
            model.cleargrads()
            loss.backward()
        if outside:
            F.sum(model.predictor(x)).backward()


# -- a model whose backward costs are known --------------------------------

def sleep_backward(x, seconds):
    return SleepBackward(seconds).apply((x,))[0]


class Slow(chainer.Link):

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def forward(self, x):
        return sleep_backward(x, self.seconds)


class Block(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = Slow(0.010)
            self.b = Slow(0.020)

    def forward(self, x):
        return self.b(self.a(sleep_backward(x, 0.005)))


class Net(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.block = Block()
            self.c = Slow(0.015)

    def forward(self, x):
        return self.c(self.block(x))


def test_backward_charged_to_the_link_that_created_it():
    hook = TimerHook(backward=True)
    model = Net()
    walls = 0.0
    with hook:
        for _ in range(2):
            y = sleep_backward(model(chainer.Variable(
                numpy.zeros(3, numpy.float32))), 0.005)  # outside links
            y.grad = numpy.ones(3, numpy.float32)
            start = time.perf_counter()
            y.backward()
            walls += time.perf_counter() - start
    summary = hook.summary(by='path')
    assert list(summary) == [
        '/', '/block', '/block/a', '/block/b', '/c', '(outside)']
    own = {'/': 0.0, '/block': 0.010, '/block/a': 0.020, '/block/b': 0.040,
           '/c': 0.030, '(outside)': 0.010}
    selves = field(summary, 'backward_self_time', 1)
    for key, seconds in own.items():
        assert seconds <= selves[key], key  # real sleeps: no upper bound
    assert selves['/'] == 0.0  # Net applies no function itself
    inclusive = field(summary, 'backward_time', 1)
    assert inclusive['/block'] == pytest.approx(
        selves['/block'] + selves['/block/a'] + selves['/block/b'])
    assert inclusive['/'] == pytest.approx(inclusive['/block'] + selves['/c'])
    assert inclusive['(outside)'] == selves['(outside)']
    total = hook.total_backward_time()
    assert sum(selves.values()) == pytest.approx(total, abs=1e-12)
    assert inclusive['/'] + selves['(outside)'] == pytest.approx(total)
    assert 0.110 <= total <= walls
    # Forward times are untouched by backward timing.
    assert summary['(outside)']['occurrence'] == 0
    assert summary['/']['elapsed_time'] < selves['/block/b']


def test_ticks_of_a_classifier(clock):
    hook = TimerHook(backward=True)
    train(hook, L.Classifier(MLP()), iterations=2)
    summary = hook.summary(by='path')
    assert list(summary) == PATHS  # the loss is computed in the Classifier
    # softmax_cross_entropy, linear, relu, linear: one tick each.
    assert field(summary, 'backward_self_time') == dict.fromkeys(PATHS, 2)
    assert field(summary, 'backward_time') == {
        '/': 8, '/predictor': 6, '/predictor/l1': 2, '/predictor/l2': 2}
    assert hook.total_backward_time() == 8 * TICK
    assert hook.total_backward_time('eval') == 0
    assert field(summary, 'elapsed_time') == {
        '/': 14, '/predictor': 10, '/predictor/l1': 2, '/predictor/l2': 2}


def test_class_summary_is_chainers(clock):
    hook = TimerHook(backward=True)
    train(hook, L.Classifier(MLP()))
    summary = hook.summary()
    assert list(summary) == ['Linear', 'MLP', 'Classifier']
    for entry in summary.values():
        assert sorted(entry) == ['elapsed_time', 'occurrence', 'self_time']


def test_tree_table(clock):
    hook = TimerHook(backward=True)
    model = L.Classifier(MLP())
    train(hook, model, iterations=2, outside=True)
    out = io.StringIO()
    hook.print_report(unit='ms', file=out, by='path')
    assert out.getvalue().splitlines() == [
        'LinkPath     ElapsedTime  SelfTime  BackwardTime  BackwardSelf'
        '  Occurrence',
        '/                13.67ms    3.91ms        7.81ms        1.95ms'
        '           2',
        '  predictor      14.65ms    8.79ms        8.79ms        2.93ms'
        '           3',
        '    l1            2.93ms    2.93ms        2.93ms        2.93ms'
        '           3',
        '    l2            2.93ms    2.93ms        2.93ms        2.93ms'
        '           3',
        '(outside)                                 0.98ms        0.98ms',
    ]
    out = io.StringIO()
    TimerHook().print_report(file=out, by='path')
    assert out.getvalue().split() == [
        'LinkPath', 'ElapsedTime', 'SelfTime', 'Occurrence']


# -- scope, modes, the outside bucket ----------------------------------------

def test_links_out_of_scope_charge_their_caller(clock):
    model = L.Classifier(MLP())
    hook = TimerHook(backward=True)
    hook.set_scope({id(model): 'main', id(model.predictor): 'main/predictor',
                    id(model.predictor.l1): 'main/predictor/l1'},
                   train=True, eval=False)
    train(hook, model)
    summary = hook.summary(by='name')
    assert field(summary, 'backward_self_time') == {
        'main': 1, 'main/predictor': 2, 'main/predictor/l1': 1}
    assert hook.total_backward_time() == 4 * TICK


def test_outside_bucket_and_modes(clock):
    model = L.Classifier(MLP())
    hook = TimerHook(backward=True)
    hook.set_scope({id(model.predictor.l1): 'main/predictor/l1'})
    hook.add_root(model)
    x, t = data()
    with hook:
        model(x, t).backward()
        with chainer.using_config('train', False):
            F.sum(model.predictor(x)).backward()
    train_summary = hook.summary(by='path', mode='train')
    # Only l1 is timed: the loss, l2 and relu were created outside it.
    assert field(train_summary, 'backward_self_time') == {
        '/predictor/l1': 1, '(outside)': 3}
    assert list(train_summary)[-1] == '(outside)'
    assert field(hook.summary(by='path', mode='eval'),
                 'backward_self_time') == {'/predictor/l1': 1,
                                           '(outside)': 3}
    assert hook.total_backward_time() == 8 * TICK


def test_mode_out_of_scope_is_not_timed(clock):
    model = L.Classifier(MLP())
    hook = TimerHook(backward=True)
    hook.set_scope(train=True, eval=False)
    x, t = data()
    with hook:
        with chainer.using_config('train', False):
            model(x, t).backward()
            F.sum(model.predictor(x)).backward()
    assert hook.summary(by='path') == {}
    assert hook.total_backward_time() == 0


# -- registration, retirement, leaks -----------------------------------------

def test_function_hook_lives_with_the_link_hook():
    hook = TimerHook(backward=True)
    assert chainer.get_function_hooks() == {}
    with hook:
        assert hook_keys(chainer.get_function_hooks()) == [
            'chainer_hookext.TimerHook_backward']
        # Chainer's function TimerHook is named 'TimerHook': no clash.
        with chainer_function_timer.TimerHook():
            pass
    assert chainer.get_function_hooks() == {}
    with TimerHook(backward=False):
        assert chainer.get_function_hooks() == {}
    link = L.Linear(2, 2)
    link.add_hook(hook)
    assert len(chainer.get_function_hooks()) == 1
    link.delete_hook(hook.name)
    assert chainer.get_function_hooks() == {}


def test_two_hooks_time_the_same_backward(clock):
    first, second = TimerHook(backward=True), TimerHook(name='second',
                                                        backward=True)
    model = L.Classifier(MLP())
    with first:
        train(second, model)
    # One clock for both: each step's time includes a read of the other.
    for hook in (first, second):
        assert field(hook.summary(by='path'), 'backward_self_time') == (
            dict.fromkeys(PATHS, 2))


def test_two_timers_at_once_both_time_backward(clock):
    # Each registered timer tags nodes under its own attribute.
    model = L.Classifier(MLP())
    first = TimerHook(backward=True)
    second = TimerHook(name='second', backward=True)
    x, t = data()
    with first:
        with second:
            model(x, t).backward()
    for hook in (first, second):
        summary = hook.summary(by='path')
        assert all(e['backward_self_time'] > 0 for e in summary.values())
    assert hook_keys(chainer.get_function_hooks()) == []


def test_backward_after_the_hook_was_re_registered(clock):
    model = L.Classifier(MLP())
    hook = TimerHook(backward=True)
    x, t = data()
    with hook:
        loss = model(x, t)
    with hook:
        loss.backward()  # the records of the forward were retired
    assert field(hook.summary(by='path'), 'backward_self_time') == (
        dict.fromkeys(PATHS, 1))


def test_tags_keep_no_node_graph_or_link_alive():
    model = MLP()
    hook = TimerHook(backward=True)
    x = chainer.Variable(data()[0])
    with hook:
        h = model(x)
        node, array = weakref.ref(h.creator), weakref.ref(h.array)
        F.sum(h).backward()
        del h
        gc.collect()
        assert node() is None and array() is None
        kept = F.sum(model(x))  # a graph that outlives the registration
    link = weakref.ref(model.l1)
    del model
    gc.collect()
    assert link() is None
    kept.backward()  # no hook registered: not timed
    assert list(hook.summary(by='path')) == ['/', '/l1', '/l2', '(outside)']


def retained_growth(hook, model, n=100):
    """Bytes retained by ``n`` more training steps (after warming up)."""
    x, t = data()
    with hook:
        for _ in range(300):  # counts past the cached small ints
            model(x, t).backward()
        gc.collect()
        tracemalloc.start()
        try:
            model(x, t).backward()  # the model keeps its last graph
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(n):
                model(x, t).backward()
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()


class NoHook(object):

    def __enter__(self):
        pass

    def __exit__(self, *args):
        pass


def test_memory_does_not_grow_with_calls():
    model = L.Classifier(MLP())
    ours = retained_growth(TimerHook(backward=True), model)
    bare = retained_growth(NoHook(), model)
    # 400 backward steps: anything kept per step would show in the KiBs.
    assert ours - bare < 512
    theirs = retained_growth(chainer_function_timer.TimerHook(), model)
    assert theirs - bare > 400 * 2 * 32  # a record per forward and backward


# -- serialization -----------------------------------------------------------

@pytest.mark.parametrize('fmt', ['npz', 'hdf5'])
def test_serialize_round_trip(tmp_path, fmt, clock):
    if fmt == 'hdf5':
        pytest.importorskip('h5py')
    save = getattr(chainer.serializers, 'save_' + fmt)
    load = getattr(chainer.serializers, 'load_' + fmt)
    model = L.Classifier(MLP())
    hook = TimerHook(backward=True)
    train(hook, model, iterations=2, outside=True)
    path = str(tmp_path / ('hook.' + fmt))
    save(path, hook)
    restored = TimerHook(backward=True)
    train(restored, model)  # state to be replaced
    load(path, restored)
    for by in ('class', 'path', 'name'):
        for mode in (None, 'train', 'eval'):
            assert restored.summary(by, mode) == hook.summary(by, mode)
    assert restored.total_backward_time() == hook.total_backward_time()
    train(restored, model)
    assert field(restored.summary(by='path'), 'backward_self_time') == {
        '/': 3, '/predictor': 4, '/predictor/l1': 4, '/predictor/l2': 4,
        '(outside)': 1}


# -- CUDA events -------------------------------------------------------------

def check_backward_timing(xp):
    model = L.Classifier(MLP())
    if xp is not numpy:
        model.to_device(0)
    hook = TimerHook(backward=True)
    train(hook, model, iterations=3, xp=xp)
    summary = hook.summary(by='path')
    assert list(summary) == PATHS
    for entry in summary.values():
        assert entry['backward_time'] >= entry['backward_self_time'] > 0
    selves = sum(e['backward_self_time'] for e in summary.values())
    assert selves == pytest.approx(hook.total_backward_time(), rel=1e-9)
    assert summary['/']['backward_time'] == pytest.approx(selves, rel=1e-9)


def test_backward_timing_cpu():
    check_backward_timing(numpy)


@pytest.mark.gpu
def test_backward_timing_gpu():
    check_backward_timing(cuda.cupy)


def test_cuda_events_resolved_lazily(fake_cuda, monkeypatch):
    # Forward and backward pairs share one queue: 4 of each per iteration.
    monkeypatch.setattr(timing_clock, 'MAX_PENDING', 12)
    hook = TimerHook(backward=True)
    model = L.Classifier(MLP())
    x, t = data()
    with hook:
        model(x, t).backward()
        assert fake_cuda == []
        model(x, t).backward()  # 12 pending: the oldest 6 are resolved
        assert len(fake_cuda) == 6
        F.sum(model.predictor(x)).backward()  # 1 + 3 steps
    # Unregistering resolves every event, backward (12) and forward (11).
    assert len(fake_cuda) == 12 + 11
    summary = hook.summary(by='path')
    assert field(summary, 'backward_self_time') == {
        '/': 2, '/predictor': 3, '/predictor/l1': 3, '/predictor/l2': 3,
        '(outside)': 1}


def test_switch_between_gpu_and_cpu(fake_cuda, monkeypatch):
    hook = TimerHook(backward=True)
    model = L.Classifier(MLP())
    x, t = data()
    with hook:
        model(x, t).backward()  # events
        monkeypatch.setattr(timing_clock, 'is_gpu', lambda link: False)
        model(x, t).backward()  # the CPU clock
        assert len(fake_cuda) == 8  # every pending pair, at the switch
        monkeypatch.setattr(timing_clock, 'is_gpu', lambda link: True)
        model(x, t).backward()  # events again
    with hook:  # a new registration starts on the GPU: events
        resolved = len(fake_cuda)
        model(x, t).backward()
        assert len(fake_cuda) == resolved
    assert field(hook.summary(by='path'), 'backward_self_time') == (
        dict.fromkeys(PATHS, 4))


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"TimerHook\(backward='yes'\)"):
        TimerHook(backward='yes')
    assert TimerHook().backward is False

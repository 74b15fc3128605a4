import gc
import io
import time
import tracemalloc
import weakref

import chainer
import chainer.links as L
import numpy
import pytest
from chainer.backends import cuda
from chainer.link_hooks import timer as chainer_timer

from chainer_hookext import TimerHook
from chainer_hookext.timing import clock as timing_clock
from tests.conftest import Boom
from tests.conftest import MLP
from tests.conftest import TICK
from tests.conftest import data
from tests.conftest import occurrences
from tests.conftest import raise_boom


def ticks(summary, field='elapsed_time'):
    return {key: entry[field] / TICK for key, entry in summary.items()}


def run_with(hook, model, calls=3, eval_calls=0):
    x, t = data(model.xp)
    with hook:
        for _ in range(calls):
            model(x, t)
        with chainer.using_config('train', False):
            for _ in range(eval_calls):
                model(x, t)


# -- drop-in compatibility with chainer.link_hooks.TimerHook --------------

@pytest.mark.parametrize('unit', ['sec', 'ms', 'us', 'ns', 'auto',
                                  'auto_foreach'])
def test_same_summary_and_table_as_chainer(clock, unit):
    model = L.Classifier(MLP())
    ours, theirs = TimerHook(), chainer_timer.TimerHook()
    run_with(ours, model, calls=2, eval_calls=1)
    clock()
    run_with(theirs, model, calls=2, eval_calls=1)
    summary = ours.summary()
    assert list(summary) == list(theirs.summary()) == [
        'Linear', 'MLP', 'Classifier']
    for key, entry in theirs.summary().items():
        assert summary[key]['elapsed_time'] == entry['elapsed_time']
        assert summary[key]['occurrence'] == entry['occurrence']
    assert ours.total_time() == theirs.total_time() == 21 * TICK
    out_ours, out_theirs = io.StringIO(), io.StringIO()
    ours.print_report(unit, out_ours)
    theirs.print_report(unit=unit, file=out_theirs)
    assert out_ours.getvalue() == out_theirs.getvalue()
    assert ours.name == 'TimerHook'


def test_print_report_to_stdout_by_default(capsys):
    hook = TimerHook()
    run_with(hook, L.Classifier(MLP()), calls=1)
    hook.print_report()
    assert capsys.readouterr().out.split('\n')[0].split() == [
        'LinkName', 'ElapsedTime', 'Occurrence']


@pytest.mark.parametrize('by', ['class', 'path', 'name'])
def test_nothing_recorded(by):
    hook = TimerHook()
    assert hook.summary(by=by) == {}
    assert hook.total_time() == 0
    out = io.StringIO()
    hook.print_report(file=out, by=by)
    assert len(out.getvalue().splitlines()) == 1


# -- paths and self times --------------------------------------------------

class Sleep(chainer.Link):

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def forward(self, x):
        time.sleep(self.seconds)
        return x


class Block(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = Sleep(0.010)
            self.b = Sleep(0.005)

    def forward(self, x):
        time.sleep(0.005)
        return self.b(self.a(x))


class Net(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.block = Block()
            self.c = Sleep(0.005)

    def forward(self, x):
        return self.c(self.block(x))


def test_paths_and_self_times_with_sleeps():
    hook = TimerHook()
    net = Net()
    with hook:
        for _ in range(2):
            net(None)
    summary = hook.summary(by='path')
    assert list(summary) == ['/', '/block', '/block/a', '/block/b', '/c']
    assert set(occurrences(summary).values()) == {2}
    own = {'/': 0, '/block': 0.010, '/block/a': 0.020, '/block/b': 0.010,
           '/c': 0.010}
    for path, seconds in own.items():
        assert seconds <= summary[path]['self_time'], path  # no upper bound
    assert summary['/block']['elapsed_time'] >= 0.040
    assert summary['/']['elapsed_time'] >= 0.050
    total = sum(entry['self_time'] for entry in summary.values())
    assert total == pytest.approx(hook.total_time(), abs=1e-12)
    assert total == pytest.approx(summary['/']['elapsed_time'], abs=1e-12)


def test_tree_table(clock):
    hook = TimerHook()
    run_with(hook, L.Classifier(MLP()), calls=2)
    out = io.StringIO()
    hook.print_report(unit='ms', file=out, by='path')
    assert out.getvalue().splitlines() == [
        'LinkPath     ElapsedTime  SelfTime  Occurrence',
        '/                13.67ms    3.91ms           2',
        '  predictor       9.77ms    5.86ms           2',
        '    l1            1.95ms    1.95ms           2',
        '    l2            1.95ms    1.95ms           2',
    ]


def test_by_name_is_path_without_scope(clock):
    hook = TimerHook()
    run_with(hook, L.Classifier(MLP()), calls=1)
    assert hook.summary(by='name') == hook.summary(by='path')


class Holder(chainer.Chain):
    """Calls a link it does not register, and one link twice."""

    def __init__(self):
        super().__init__()
        self.hidden = [L.Linear(4, 4)]
        with self.init_scope():
            self.l1 = L.Linear(4, 4)

    def forward(self, x):
        return self.l1(self.hidden[0](self.l1(x)))


def test_paths_of_links_outside_the_tree(clock):
    hook = TimerHook()
    with hook:
        Holder()(numpy.zeros((1, 4), numpy.float32))
    summary = hook.summary(by='path')
    assert occurrences(summary) == {'/': 1, '/l1': 2, '/<Linear>': 1}


def test_add_root_sets_paths(clock):
    model = L.Classifier(MLP())
    hook = TimerHook()
    hook.add_root(model)
    with hook:
        model.predictor(numpy.zeros((1, 4), numpy.float32))
    assert list(hook.summary(by='path')) == [
        '/predictor', '/predictor/l1', '/predictor/l2']
    with pytest.raises(TypeError, match=r'add_root\(link=42\)'):
        hook.add_root(42)


class Recursive(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.leaf = L.Linear(4, 4)

    def forward(self, x, n):
        if n:
            x = self(x, n - 1)
        return self.leaf(x)


def test_recursive_link(clock):
    hook = TimerHook()
    with hook:
        Recursive()(numpy.zeros((1, 4), numpy.float32), 2)
    summary = hook.summary(by='path')
    assert occurrences(summary) == {'/': 3, '/leaf': 3}
    # Inclusive time counts the outermost call once: not 11 + 7 + 3.
    assert ticks(summary) == {'/': 11, '/leaf': 3}
    assert ticks(summary, 'self_time') == {'/': 8, '/leaf': 3}
    assert hook.total_time() == 11 * TICK


# -- exceptions ------------------------------------------------------------

@pytest.mark.parametrize('device', ['cpu', 'fake_cuda'])
def test_forward_raising_once(request, clock, device):
    if device == 'fake_cuda':
        request.getfixturevalue('fake_cuda')
    model = L.Classifier(MLP())
    x, t = data()
    hook = TimerHook()
    with hook:
        model.predictor.l2.forward = raise_boom
        with pytest.raises(Boom):
            model(x, t)
        del model.predictor.l2.forward
        model(x, t)
        after_one = hook.summary(by='path')
        model(x, t)
        model(x, t)
    summary = hook.summary(by='path')
    # The call that raised is counted up to its last event (l2's start).
    assert ticks(after_one) == {
        '/': 4 + 7, '/predictor': 3 + 5, '/predictor/l1': 1 + 1,
        '/predictor/l2': 0 + 1}
    assert set(occurrences(after_one).values()) == {2}
    # Every later call is timed as if nothing had happened.
    assert {key: value - ticks(after_one)[key]
            for key, value in ticks(summary).items()} == {
        '/': 14, '/predictor': 10, '/predictor/l1': 2, '/predictor/l2': 2}
    assert ticks(summary, 'self_time') == {
        '/': 7, '/predictor': 11, '/predictor/l1': 4, '/predictor/l2': 3}
    assert hook.total_time() == 25 * TICK


def test_summary_ends_calls_left_by_an_exception(clock):
    model = L.Classifier(MLP())
    model.predictor.l2.forward = raise_boom
    hook = TimerHook()
    with hook:
        with pytest.raises(Boom):
            model(*data())
        summary = hook.summary(by='path')
    assert ticks(summary) == {
        '/': 4, '/predictor': 3, '/predictor/l1': 1, '/predictor/l2': 0}
    assert set(occurrences(summary).values()) == {1}


class Catching(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.bad = L.Linear(4, 4)
            self.good = L.Linear(4, 4)
        self.bad.forward = raise_boom

    def forward(self, x):
        try:
            self.bad(x)
        except Boom:
            pass
        return self.good(x)


def test_exception_caught_inside_the_model(clock):
    hook = TimerHook()
    with hook:
        model = Catching()
        for _ in range(2):
            model(numpy.zeros((1, 4), numpy.float32))
    summary = hook.summary(by='path')
    assert occurrences(summary) == {'/': 2, '/bad': 2, '/good': 2}
    assert ticks(summary) == {'/': 8, '/bad': 0, '/good': 2}


def test_hook_keeps_no_link_after_removal():
    model = L.Classifier(MLP())
    hook = TimerHook()
    hook.add_root(model)
    run_with(hook, model, calls=1)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None
    assert hook.summary()['Classifier']['occurrence'] == 1


# -- modes, scope ----------------------------------------------------------

def test_modes_kept_apart(clock):
    hook = TimerHook()
    run_with(hook, L.Classifier(MLP()), calls=2, eval_calls=1)
    assert occurrences(hook.summary(mode='train')) == {
        'Linear': 4, 'MLP': 2, 'Classifier': 2}
    assert occurrences(hook.summary(mode='eval')) == {
        'Linear': 2, 'MLP': 1, 'Classifier': 1}
    assert occurrences(hook.summary()) == {
        'Linear': 6, 'MLP': 3, 'Classifier': 3}
    assert hook.total_calls('eval') == 1
    assert hook.total_time('train') == 14 * TICK


def test_scope_and_train_only(clock):
    model = L.Classifier(MLP())
    hook = TimerHook()
    # l2 out of scope: its time is the self time of its caller.
    hook.set_scope({id(model): 'main', id(model.predictor): 'main/predictor',
                    id(model.predictor.l1): 'main/predictor/l1'},
                   train=True, eval=False)
    run_with(hook, model, calls=1, eval_calls=2)
    assert hook.summary(mode='eval') == {}
    summary = hook.summary(by='name')
    assert ticks(summary) == {
        'main': 7, 'main/predictor': 5, 'main/predictor/l1': 1}
    assert ticks(summary, 'self_time') == {
        'main': 2, 'main/predictor': 4, 'main/predictor/l1': 1}
    assert list(hook.summary(by='path')) == [
        '/', '/predictor', '/predictor/l1']


def test_scope_below_an_untimed_caller(clock):
    model = L.Classifier(MLP())
    hook = TimerHook()
    hook.set_scope({id(model.predictor.l2): 'main/predictor/l2'})
    hook.add_root(model)
    run_with(hook, model, calls=2)
    assert ticks(hook.summary(by='path')) == {'/predictor/l2': 2}


# -- memory, serialization -------------------------------------------------

def retained_growth(hook, model, x, n):
    with hook:
        for _ in range(300):  # counts past the cached small ints
            model(x)
        gc.collect()
        tracemalloc.start()
        try:
            for _ in range(n):
                model(x)
            gc.collect()
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()


def test_memory_does_not_grow_with_calls():
    model = MLP()
    x = numpy.zeros((1, 4), numpy.float32)
    ours = retained_growth(TimerHook(), model, x, 400)
    theirs = retained_growth(chainer_timer.TimerHook(), model, x, 400)
    assert ours < 512
    assert theirs > 1200 * 50  # 3 link calls per forward, each kept


@pytest.mark.parametrize('fmt', ['npz', 'hdf5'])
def test_serialize_round_trip(tmp_path, fmt):
    if fmt == 'hdf5':
        pytest.importorskip('h5py')
    save = getattr(chainer.serializers, 'save_' + fmt)
    load = getattr(chainer.serializers, 'load_' + fmt)
    model = L.Classifier(MLP())
    hook = TimerHook()
    run_with(hook, model, calls=2, eval_calls=1)
    path = str(tmp_path / ('hook.' + fmt))
    save(path, hook)
    restored = TimerHook()
    run_with(restored, model, calls=1)  # state to be replaced
    load(path, restored)
    for by in ('class', 'path', 'name'):
        for mode in (None, 'train', 'eval'):
            assert restored.summary(by, mode) == hook.summary(by, mode)
    run_with(restored, model, calls=1)
    assert occurrences(restored.summary(by='path', mode='train')) == {
        '/': 3, '/predictor': 3, '/predictor/l1': 3, '/predictor/l2': 3}


def test_serialize_while_registered(clock):
    model = L.Classifier(MLP())
    hook = TimerHook()
    x, t = data()
    with hook:
        model(x, t)
        target = {}
        hook.serialize(chainer.serializers.DictionarySerializer(target))
    restored = TimerHook()
    restored.serialize(chainer.serializers.NpzDeserializer(target))
    assert restored.summary(by='path') == hook.summary(by='path')


# -- CUDA events -----------------------------------------------------------

def check_timing(xp):
    model = L.Classifier(MLP())
    if xp is not numpy:
        model.to_device(0)
    hook = TimerHook()
    run_with(hook, model, calls=3)
    summary = hook.summary(by='path')
    assert occurrences(summary) == {
        '/': 3, '/predictor': 3, '/predictor/l1': 3, '/predictor/l2': 3}
    for entry in summary.values():
        assert entry['elapsed_time'] >= entry['self_time'] >= 0
    assert sum(e['self_time'] for e in summary.values()) == pytest.approx(
        hook.total_time(), rel=1e-6)
    assert hook.total_time() > 0


def test_timing_cpu():
    check_timing(numpy)


@pytest.mark.gpu
def test_timing_gpu():
    check_timing(cuda.cupy)


def test_cuda_events_resolved_lazily(fake_cuda, monkeypatch):
    monkeypatch.setattr(timing_clock, 'MAX_PENDING', 8)
    hook = TimerHook()
    model = L.Classifier(MLP())
    x, t = data()
    with hook:
        model(x, t)
        assert fake_cuda == []
        model(x, t)  # 8 pending: the oldest 4 are resolved
        assert len(fake_cuda) == 4
    summary = hook.summary(by='path')
    assert len(fake_cuda) == 8
    assert ticks(summary) == {
        '/': 14, '/predictor': 10, '/predictor/l1': 2, '/predictor/l2': 2}


# -- arguments -------------------------------------------------------------

def test_bad_arguments():
    hook = TimerHook()
    with pytest.raises(ValueError, match=r"print_report\(unit='min'\)"):
        hook.print_report(unit='min')
    with pytest.raises(ValueError, match=r"summary\(by='link'\)"):
        hook.summary(by='link')
    with pytest.raises(ValueError, match=r"summary\(mode='test'\)"):
        hook.summary(mode='test')
    with pytest.raises(TypeError, match=r'TimerHook\(name=3\)'):
        TimerHook(name=3)
    assert TimerHook(name='mine').name == 'mine'


def test_a_wrong_type_is_a_type_error_a_wrong_value_a_value_error():
    hook = TimerHook()
    with pytest.raises(TypeError, match=r"print_report\(unit=1\)` is not a "
                       r"str: use one of 'sec'"):
        hook.print_report(unit=1)
    with pytest.raises(TypeError, match=r"summary\(by=None\)` is not a str"):
        hook.summary(by=None)
    with pytest.raises(TypeError, match=r"summary\(mode=True\)` is not a "
                       r"str or None: use one of 'train', 'eval', None"):
        hook.summary(mode=True)
    with pytest.raises(TypeError, match=r"add_root\(path=1\)` is not a str"):
        hook.add_root(L.Linear(2, 2), path=1)
    with pytest.raises(ValueError, match=r"add_root\(path='x'\)"):
        hook.add_root(L.Linear(2, 2), path='x')
    assert hook.summary(by=numpy.str_('path')) == {}


def test_cuda_events_reused_between_reads(fake_cuda):
    # Each read gives the resolved events back: ten more iterations create
    # no event, and are timed as the first.
    hook = TimerHook(backward=True)
    model = L.Classifier(MLP())
    x, t = data()
    with hook:
        for _ in range(2):
            model(x, t).backward()
            first = hook.summary(by='path')
        created = hook.events.created
        for _ in range(10):
            model(x, t).backward()
            hook.summary(by='path')
        assert hook.events.created == created
        summary = hook.summary(by='path')
    for field in ('elapsed_time', 'backward_time'):
        assert ticks(summary, field) == {
            key: 6 * value for key, value in ticks(first, field).items()}

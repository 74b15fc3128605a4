"""TimerHook(functions=True): each link's figures by function type."""

import io

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext import TimerHook
from chainer_hookext.timing import records
from tests.conftest import MLP
from tests.conftest import SlowNode
from tests.conftest import TICK
from tests.conftest import data


class Gradient(SlowNode):
    """A second type, applied inside SlowNode's backward step."""


class Block(chainer.Link):
    """Applies two SlowNodes (1 s forward, 2 s backward each) around 0.5 s
    of its own Python."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def forward(self, x):
        x = SlowNode(self.clock, 1.0, 2.0).apply((x,))[0]
        self.clock.sleep(0.5)
        return SlowNode(self.clock, 1.0, 2.0).apply((x,))[0]


class Net(chainer.Chain):

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        with self.init_scope():
            self.block = Block(clock)

    def forward(self, x):
        return self.block(x)


def run(hook, model, clock, iterations=1):
    # The model, then outside every link a node of 4 s forward whose 8 s
    # backward applies a Gradient node taking 16 s: the step's work.
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    with hook:
        for _ in range(iterations):
            y = model(x)
            y = SlowNode(clock, 4.0, 8.0, inner=Gradient(clock, 16.0)).apply(
                (y,))[0]
            F.sum(y).backward()


def rows(hook, **kwargs):
    return {(e.link, e.function): e[2:] for e in hook.function_entries(
        **kwargs)}


def test_exact_attribution(still):
    hook = TimerHook(backward=True, functions=True)
    run(hook, Net(still), still, iterations=2)
    got = rows(hook)
    # (time, backward_time, occurrence, flops, backward_flops)
    assert got[('/block', 'SlowNode')] == (4.0, 8.0, 4, 0, 0)
    # Outside every link: its type under (outside); the Gradient node
    # applied in its step is the step's time, not a forward of its own.
    assert got[(records.OUTSIDE, 'SlowNode')] == (8.0, 48.0, 2, 0, 0)
    assert got[(records.OUTSIDE, 'Sum')][:3] == (0.0, 0.0, 2)
    assert not any(function == 'Gradient' for _, function in got)
    summary = hook.summary(by='path')
    block = summary['/block']
    assert block['self_time'] == 5.0
    assert block['rest_time'] == 1.0  # the 0.5 s of Python, twice
    assert block['functions']['SlowNode']['backward_time'] == (
        block['backward_self_time'])
    assert summary['/']['functions'] == {}
    assert summary['/']['rest_time'] == 0.0
    assert 'rest_time' not in summary[records.OUTSIDE]


def test_by_name_and_mode(still):
    hook = TimerHook(backward=True, functions=True)
    model = Net(still)
    hook.set_scope({id(model): 'main', id(model.block): 'main/block'})
    run(hook, model, still)
    assert rows(hook, by='name', mode='train')[
        ('main/block', 'SlowNode')][:3] == (2.0, 4.0, 2)
    assert rows(hook, by='name', mode='eval') == {}
    with pytest.raises(ValueError, match='by'):
        hook.function_entries(by='class')


def test_off_by_default(still):
    hook = TimerHook(backward=True)
    run(hook, Net(still), still)
    assert hook.function_entries() == []
    assert 'functions' not in hook.summary(by='path')['/block']
    timer = hook._backward_timer
    assert timer is None  # spent: a new one with the next registration
    with pytest.raises(ValueError, match='backward=True'):
        TimerHook(functions=True)


def test_splits_add_up_on_a_real_model(clock):
    # Every read a tick: each link's types and rest make its self time,
    # and its types' backward its backward self time, exactly.
    hook = TimerHook(backward=True, flops=True, functions=True)
    model = L.Classifier(MLP())
    x, t = data()
    with hook:
        for _ in range(3):
            loss = model(x, t)
            model.cleargrads()
            loss.backward()
    summary = hook.summary(by='path')
    for key, link in summary.items():
        functions = link['functions'].values()
        if key != records.OUTSIDE:
            assert link['rest_time'] + sum(
                f['time'] for f in functions) == link['self_time']
            assert link['rest_time'] > 0
        assert sum(f['backward_time'] for f in functions) == (
            link['backward_self_time'])
        assert sum(f['backward_flops'] for f in functions) == (
            link['backward_self_flops'])
        assert sum(f['flops'] for f in functions) == link['self_flops']
    assert list(summary['/predictor/l1']['functions']) == ['LinearFunction']
    assert summary['/predictor/l1']['functions']['LinearFunction'][
        'occurrence'] == 3
    assert set(summary['/']['functions']) == {
        'SoftmaxCrossEntropy', 'Accuracy'}
    total = sum(f['backward_time'] for link in summary.values()
                for f in link['functions'].values())
    assert total == hook.total_backward_time()
    assert total % TICK == 0


def test_a_new_type_and_a_type_twice(still):
    hook = TimerHook(backward=True, functions=True)
    model = Net(still)
    run(hook, model, still)
    assert ('/block', 'ReLU') not in rows(hook)
    model.block.forward = lambda x: F.relu(F.relu(Block.forward(
        model.block, x)))
    try:
        run(hook, model, still)
    finally:
        del model.block.forward
    assert rows(hook)[('/block', 'ReLU')][2] == 2


def test_forget_recomputes_in_the_step(still):
    # F.forget's forward applies the nodes without a graph; its backward
    # applies them again (the step's work) and steps through them.
    hook = TimerHook(backward=True, functions=True)
    model = Net(still)

    class Forgetting(chainer.Chain):
        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.net = model

        def forward(self, x):
            return F.forget(self.net, x)

    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    with hook:
        F.sum(Forgetting()(x)).backward()
    got = rows(hook)
    # Forward: the nodes in their link; Forget's own, the Python of the
    # links it runs (0.5 s).  Backward, all of it the work of the link that
    # called F.forget: Forget's step runs its forward again (1 + 0.5 + 1 s),
    # then the steps of the nodes made again, by their type.
    assert got[('/', 'Forget')][:3] == (0.5, 2.5, 1)
    assert got[('/net/block', 'SlowNode')][:3] == (2.0, 0.0, 2)
    assert got[('/', 'SlowNode')][:3] == (0.0, 4.0, 0)


def test_double_backprop(clock):
    # A gradient penalty: the nodes of the gradient's graph, applied in
    # the first backward's steps, are those steps' work.
    hook = TimerHook(backward=True, functions=True)
    model = MLP()
    x = chainer.Variable(data()[0])
    with hook:
        y = model(x)
        loss = F.sum(y * y)
        gx, = chainer.grad([loss], [x], enable_double_backprop=True)
        (loss + F.sum(gx * gx)).backward()
    summary = hook.summary(by='path')
    total = sum(f['backward_time'] for link in summary.values()
                for f in link['functions'].values())
    assert total == hook.total_backward_time()


def test_snapshot_keeps_them(still):
    hook = TimerHook(backward=True, functions=True)
    run(hook, Net(still), still)
    target = {}
    hook.serialize(chainer.serializers.DictionarySerializer(target))
    again = TimerHook(backward=True, functions=True)
    again.serialize(chainer.serializers.NpzDeserializer(target))
    assert rows(again) == rows(hook)
    assert again.summary(by='path') == hook.summary(by='path')


def test_snapshot_of_an_earlier_version(still):
    # Without the table of function types: loads, with none.
    hook = TimerHook(backward=True, functions=True)
    run(hook, Net(still), still)
    target = {}
    hook.serialize(chainer.serializers.DictionarySerializer(target))
    for key in [k for k in target if k.startswith('functions/')]:
        del target[key]
    again = TimerHook(backward=True, functions=True)
    again.serialize(chainer.serializers.NpzDeserializer(target))
    assert rows(again) == {}
    assert again.total_backward_time() == hook.total_backward_time()


def test_print_report(still):
    hook = TimerHook(backward=True, functions=True)
    run(hook, Net(still), still)
    out = io.StringIO()
    hook.print_report(file=out, by='path', unit='sec')
    text = out.getvalue()
    assert 'SlowNode' in text and '(rest)' in text


def test_on_a_gpu_no_split_and_a_warning(fake_cuda, monkeypatch):
    # CUDA events time links and steps; nodes' forwards are not timed (a
    # pair of events per node): one warning, no figures by type; back on
    # the CPU they are.
    from chainer_hookext.timing import clock as timing_clock
    hook = TimerHook(backward=True, functions=True)
    model = L.Classifier(MLP())
    x, t = data()
    with pytest.warns(RuntimeWarning, match='functions=True.*GPU') as said:
        with hook:
            model(x, t).backward()
            model(x, t).backward()
    assert len(said) == 1  # once
    assert hook.function_entries() == []
    assert hook.total_backward_time() > 0
    monkeypatch.setattr(timing_clock, 'is_gpu', lambda link: False)
    with hook:
        model(x, t).backward()
    assert rows(hook)[('/predictor/l1', 'LinearFunction')][2] == 1

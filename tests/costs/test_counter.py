"""TimerHook(flops=True): FLOPs and bytes per link, forward and backward."""

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext import TimerHook
from chainer_hookext.costs import counter
from chainer_hookext.timing import backward as backward_module
from tests.conftest import Boom
from tests.conftest import MLP
from tests.conftest import Twice
from tests.conftest import data


def backward(y):
    """Backward from ``y`` with a gradient of ones: no node outside."""
    y.grad = numpy.ones_like(y.array)
    y.backward()


def flops_of(hook, field='flops', by='path'):
    return {key: entry[field] for key, entry in hook.summary(by=by).items()}


def train(hook, model, iterations=1):
    x, t = data()
    with hook:
        for _ in range(iterations):
            loss = model(x, t)
            model.cleargrads()
            loss.backward()


# L.Classifier(MLP(4, 8, 3)) on a batch of 2, hand-derived:
#   l1: x (2, 4) W (8, 4) + b: 2*2*4*8 + 2*8 = 144
#   relu of (2, 8): 16 (the predictor's own)
#   l2: (2, 8) W (3, 8) + b: 2*2*8*3 + 2*3 = 102
#   softmax cross entropy of (2, 3): 4*6 + 2 = 26, accuracy: 6 (the
#   classifier's own)
FORWARD = {'/': 294, '/predictor': 262, '/predictor/l1': 144,
           '/predictor/l2': 102}
FORWARD_SELF = {'/': 32, '/predictor': 16, '/predictor/l1': 144,
                '/predictor/l2': 102}
# Backward, from the nodes Chainer applies:
#   softmax cross entropy's gradient: 5*6 = 30
#   l2: LinearGradData 2*2*3*8 = 96, LinearGradWeight 2*2*8*3 = 96, the
#       bias gradient (a Sum of gy over the batch) 6
#   ReLUGrad2: 16
#   l1, fed a raw array: no LinearGradData; LinearGradWeight 2*2*4*8 = 128
#       and the bias gradient 16
BACKWARD = {'/': 388, '/predictor': 358, '/predictor/l1': 144,
            '/predictor/l2': 198}
BACKWARD_SELF = {'/': 30, '/predictor': 16, '/predictor/l1': 144,
                 '/predictor/l2': 198}


def test_hand_derived_counts_of_an_mlp():
    hook = TimerHook(backward=True, flops=True)
    train(hook, L.Classifier(MLP()), iterations=3)
    assert flops_of(hook) == {k: 3 * v for k, v in FORWARD.items()}
    assert flops_of(hook, 'self_flops') == {
        k: 3 * v for k, v in FORWARD_SELF.items()}
    assert flops_of(hook, 'backward_flops') == {
        k: 3 * v for k, v in BACKWARD.items()}
    assert flops_of(hook, 'backward_self_flops') == {
        k: 3 * v for k, v in BACKWARD_SELF.items()}
    # l2 reads x (2, 8), W (3, 8), b (3) and writes (2, 3), in float32.
    assert hook.summary(by='path')['/predictor/l2']['bytes'] == 3 * 4 * (
        16 + 24 + 3 + 6)
    assert hook.unknown_functions() == {}


def test_self_flops_and_outside_add_up_to_the_whole():
    model = L.Classifier(MLP())
    hook = TimerHook(backward=True, flops=True)
    x, t = data()
    with hook:
        loss = model(x, t) * 2.0  # outside every link: MulConstant
        loss.backward()
    summary = hook.summary(by='path')
    assert sum(e['self_flops'] for e in summary.values()) == (
        summary['/']['flops'])
    # The outside node's own forward is not counted; its backward is.
    assert summary['(outside)']['backward_flops'] == 1
    assert sum(e['backward_self_flops'] for e in summary.values()) == (
        summary['/']['backward_flops'] + 1)


class CNN(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(3, 4, 3, stride=2, pad=1)
            self.bn = L.BatchNormalization(4)

    def forward(self, x):
        return self.bn(self.conv(x))


def test_convolution_and_batch_normalization_per_link():
    x = numpy.ones((2, 3, 8, 8), numpy.float32)  # a raw array
    model = CNN()
    model.cleargrads()  # else backward adds to the old gradients
    hook = TimerHook(backward=True, flops=True)
    with hook:
        backward(model(x))
    summary = hook.summary(by='path')
    outputs = 2 * 4 * 4 * 4  # (8 + 2 - 3) // 2 + 1 = 4
    conv = summary['/conv']
    assert conv['flops'] == 2 * outputs * 3 * 3 * 3 + outputs
    # Backward: Convolution2DGradW and the bias gradient (a sum over
    # batch and space); no input gradient for a raw array.
    assert conv['backward_flops'] == 2 * outputs * 3 * 3 * 3 + outputs
    bn = summary['/bn']
    assert bn['flops'] == 7 * outputs  # training mode
    assert bn['backward_flops'] == 10 * outputs
    with chainer.using_config('train', False), hook:
        model(x)
    assert hook.summary(by='path', mode='eval')['/bn']['flops'] == (
        4 * outputs)


class Recurrent(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(10, 6)
            self.lstm = L.LSTM(6, 5)

    def forward(self, ids):
        self.lstm.reset_state()
        return self.lstm(self.embed(ids))


def test_embed_id_and_lstm_per_link():
    model = Recurrent()
    model.cleargrads()
    ids = numpy.array([1, 2, 3], numpy.int32)
    hook = TimerHook(backward=True, flops=True)
    with hook:
        backward(model(ids))
    summary = hook.summary(by='path')
    assert summary['/embed']['flops'] == 0  # a gather: bytes only
    assert summary['/embed']['bytes'] > 0
    assert summary['/embed']['backward_flops'] == 3 * 6  # a scatter-add
    lstm = summary['/lstm']
    # The first step: the input's linear (3 x 6 -> 4 * 5 gates) and the
    # LSTM function on a zero cell (9 per unit); no hidden-state product.
    assert lstm['flops'] == (2 * 3 * 6 * 20 + 3 * 20) + 9 * 3 * 5
    # LSTMGrad (14 per unit); the linear's input gradient (the embedding
    # is a variable), weight gradient and bias gradient.
    assert lstm['backward_flops'] == 14 * 3 * 5 + 2 * (2 * 3 * 20 * 6) + (
        3 * 20)


class WithUnknown(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 3)

    def forward(self, x):
        return Twice().apply((self.l1(x),))[0]


def test_unknown_function_types_are_listed_never_zero():
    hook = TimerHook(backward=True, flops=True)
    model = WithUnknown()
    x, _ = data()
    with hook:
        for _ in range(2):
            model.cleargrads()
            backward(model(x))
    # Twice in forward and its gradient in backward: 2 nodes a pass.
    assert hook.unknown_functions() == {'Twice': {'/': 4}}
    assert hook.summary(by='path')['/']['self_flops'] == 0  # not counted
    assert hook.summary(by='path')['/l1']['flops'] == 2 * (2 * 2 * 4 * 3 + 6)


class Forgetful(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 8)

    def forward(self, x):
        return F.forget(F.relu, self.l1(x))


def test_forget_recomputation_is_backward_work():
    hook = TimerHook(backward=True, flops=True)
    x, _ = data()
    model = Forgetful()
    model.cleargrads()
    with hook:
        backward(model(x))
    root = hook.summary(by='path')['/']
    # Forward: relu of (2, 8) inside F.forget.  Backward: relu again
    # (recomputed) and its gradient.
    assert root['self_flops'] == 16
    assert root['backward_self_flops'] == 16 + 16


class FailingBackward(chainer.FunctionNode):

    def forward(self, inputs):
        return inputs

    def backward(self, indexes, grad_outputs):
        raise Boom()


def test_a_step_that_raised_is_forgotten():
    hook = TimerHook(backward=True, flops=True)
    model = MLP()
    x, _ = data()
    with hook:
        y = FailingBackward().apply((model(x),))[0]
        with pytest.raises(Boom):
            backward(y)
        h = chainer.Variable(x) * 2.0  # outside: neither forward nor backward
        model(h)
    summary = hook.summary(by='path')
    assert '(outside)' not in summary  # no backward work outside
    assert summary['/']['backward_flops'] == 0
    assert summary['/']['flops'] == 2 * (2 * 2 * 4 * 8 + 16 + 16 + (
        2 * 2 * 8 * 3 + 6))


def test_memory_is_bounded_by_call_paths():
    hook = TimerHook(backward=True, flops=True)
    model = L.Classifier(MLP())
    train(hook, model, iterations=2)
    before = len(hook.summary(by='path'))
    train(hook, model, iterations=20)
    assert len(hook.summary(by='path')) == before
    assert flops_of(hook)['/'] == 22 * FORWARD['/']


def test_without_flops_nothing_is_counted():
    hook = TimerHook(backward=True)
    train(hook, L.Classifier(MLP()))
    assert 'flops' not in hook.summary(by='path')['/']
    timer = TimerHook(backward=True, flops=True)
    with timer:
        assert type(timer._backward_timer).__mro__[:2] != (
            backward_module.BackwardTimer,)
        assert isinstance(timer._backward_timer, counter.FlopCounter)
    with hook:
        assert not isinstance(hook._backward_timer, counter.FlopCounter)


def test_flops_needs_backward():
    with pytest.raises(ValueError, match='backward=True'):
        TimerHook(flops=True)
    with pytest.raises(TypeError, match='flops=1'):
        TimerHook(backward=True, flops=1)


def test_counts_survive_a_snapshot():
    hook = TimerHook(backward=True, flops=True)
    train(hook, L.Classifier(MLP()), iterations=2)
    model = WithUnknown()
    with hook:
        backward(model(data()[0]))
    target = {}
    hook.serialize(chainer.serializers.DictionarySerializer(target))
    loaded = TimerHook(backward=True, flops=True)
    loaded.serialize(chainer.serializers.NpzDeserializer(target))
    assert loaded.summary(by='path') == hook.summary(by='path')
    assert loaded.unknown_functions() == hook.unknown_functions()


def test_a_snapshot_without_counts_loads_as_zeros():
    hook = TimerHook(backward=True)
    train(hook, L.Classifier(MLP()))
    target = {}
    hook.serialize(chainer.serializers.DictionarySerializer(target))
    for key in list(target):  # the layout before FLOPs were counted
        if key.endswith(('flops', 'bytes')) or key.startswith('unknown/'):
            del target[key]
    loaded = TimerHook(backward=True, flops=True)
    loaded.serialize(chainer.serializers.NpzDeserializer(target))
    summary = loaded.summary(by='path')
    assert summary['/']['occurrence'] == 1
    assert summary['/']['flops'] == 0

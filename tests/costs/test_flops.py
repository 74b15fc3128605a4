import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext.costs import flops


class Counted(chainer.FunctionHook):
    """Every node applied, with its cost, forward and backward."""

    name = 'Counted'

    def __init__(self):
        self.rows = []

    def forward_preprocess(self, function, in_data):
        self.rows.append((flops.name_of(function),
                          flops.count(function, in_data)))

    def costs(self, name):
        return [cost for n, cost in self.rows if n == name]


def forward_backward(model, *args):
    hook = Counted()
    with hook:
        loss = F.sum(model(*args))
        loss.backward()
    return hook


def test_linear_forward_and_backward_on_a_raw_array():
    x = numpy.zeros((5, 3), numpy.float32)
    hook = forward_backward(L.Linear(3, 4), x)
    # y = x W^T + b: 2 * 5 * 3 * 4 multiply-adds, 5 * 4 bias additions.
    assert hook.costs('LinearFunction') == [
        flops.Cost(2 * 5 * 3 * 4 + 5 * 4, 4 * (15 + 12 + 4 + 20))]
    # A raw array needs no input gradient: no LinearGradData.
    assert hook.costs('LinearGradData') == []
    assert hook.costs('LinearGradWeight') == [
        flops.Cost(2 * 5 * 3 * 4, 4 * (15 + 20 + 12))]


def test_linear_without_bias_fed_a_variable():
    x = chainer.Variable(numpy.zeros((5, 3), numpy.float32))
    hook = forward_backward(L.Linear(3, 4, nobias=True), x)
    assert [c.flops for c in hook.costs('LinearFunction')] == [2 * 5 * 3 * 4]
    assert [c.flops for c in hook.costs('LinearGradData')] == [2 * 5 * 4 * 3]
    assert [c.flops for c in hook.costs('LinearGradWeight')] == [
        2 * 5 * 3 * 4]


def test_convolution_2d():
    x = numpy.zeros((2, 3, 8, 8), numpy.float32)
    hook = forward_backward(L.Convolution2D(3, 4, 3, stride=2, pad=1), x)
    outputs = 2 * 4 * 4 * 4  # (8 + 2 - 3) // 2 + 1 = 4
    assert [c.flops for c in hook.costs('Convolution2DFunction')] == [
        2 * outputs * 3 * 3 * 3 + outputs]
    assert [c.flops for c in hook.costs('Convolution2DGradW')] == [
        2 * outputs * 3 * 3 * 3]
    assert hook.costs('Deconvolution2DFunction') == []  # raw input


def test_convolution_2d_input_gradient_is_a_deconvolution():
    x = chainer.Variable(numpy.zeros((2, 3, 8, 8), numpy.float32))
    hook = forward_backward(L.Convolution2D(3, 4, 3, pad=1), x)
    # Each of gy's 2 * 4 * 8 * 8 elements times W[o] (3, 3, 3).
    assert [c.flops for c in hook.costs('Deconvolution2DFunction')] == [
        2 * (2 * 4 * 8 * 8) * 3 * 3 * 3]


@pytest.mark.parametrize('train, forward, backward', [
    (True, 'BatchNormalization', 'BatchNormalizationGrad'),
    (False, 'FixedBatchNormalization', 'FixedBatchNormalizationGrad')])
def test_batch_normalization(train, forward, backward):
    x = chainer.Variable(numpy.ones((4, 3, 2, 2), numpy.float32))
    with chainer.using_config('train', train):
        hook = forward_backward(L.BatchNormalization(3), x)
    per = {True: (7, 10), False: (4, 6)}[train]
    assert [c.flops for c in hook.costs(forward)] == [per[0] * 48]
    assert [c.flops for c in hook.costs(backward)] == [per[1] * 48]


def test_embed_id_is_a_gather_and_a_scatter_add():
    x = numpy.array([1, 2, 1], numpy.int32)
    hook = forward_backward(L.EmbedID(10, 4), x)
    assert hook.costs('EmbedIDFunction') == [
        flops.Cost(0, 3 * 4 + 10 * 4 * 4 + 3 * 4 * 4)]
    assert [c.flops for c in hook.costs('EmbedIDGrad')] == [3 * 4]


def test_lstm():
    x = numpy.zeros((2, 3), numpy.float32)
    hook = forward_backward(L.LSTM(3, 5), x)
    assert [c.flops for c in hook.costs('LSTM')] == [9 * 2 * 5]
    assert [c.flops for c in hook.costs('LSTMGrad')] == [14 * 2 * 5]
    # The gates' input projection is a Linear: 4 * 5 units.
    assert [c.flops for c in hook.costs('LinearFunction')] == [
        2 * 2 * 3 * 20 + 2 * 20]


def test_views_cost_bytes_only():
    x = chainer.Variable(numpy.zeros((2, 6), numpy.float32))
    hook = Counted()
    with hook:
        F.transpose(F.reshape(x, (3, 4)))
    assert hook.rows == [('Reshape', flops.Cost(0, 2 * 48)),
                         ('Transpose', flops.Cost(0, 2 * 48))]


class Unknown(chainer.FunctionNode):

    def forward(self, inputs):
        return inputs[0] * 2,


def test_a_node_without_a_formula_is_unknown():
    x = numpy.zeros(3, numpy.float32)
    hook = Counted()
    with hook:
        Unknown().apply((x,))
    assert hook.rows == [('Unknown', None)]


class CNN(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(3, 4, 3, pad=1)
            self.bn = L.BatchNormalization(4)
            self.fc = L.Linear(None, 10)

    def forward(self, x):
        h = F.max_pooling_2d(F.relu(self.bn(self.conv(x))), 2)
        h = F.average_pooling_2d(h, 2)
        return self.fc(F.dropout(h))


class RNN(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(20, 8)
            self.lstm = L.LSTM(8, 8)
            self.out = L.Linear(8, 20)

    def forward(self, x):
        return self.out(F.tanh(self.lstm(self.embed(x))))


@pytest.mark.parametrize('predictor, x, t', [
    (CNN, numpy.zeros((2, 3, 8, 8), numpy.float32), numpy.zeros(2, 'i')),
    (RNN, numpy.zeros(3, numpy.int32), numpy.zeros(3, 'i'))])
def test_every_node_of_the_example_models_is_counted(predictor, x, t):
    model = L.Classifier(predictor())
    hook = Counted()
    with hook:
        model(x, t).backward()
    assert [n for n, cost in hook.rows if cost is None] == []
    assert len(hook.rows) > 10


class ReadAttributes(object):
    """A node that keeps the names of the attributes a formula reads."""

    def __init__(self, node):
        self.__dict__['_node'] = node
        self.__dict__['read'] = set()

    def __getattr__(self, name):
        self.read.add(name)
        return getattr(self._node, name)


class CheckMemo(chainer.FunctionHook):
    """Checks that each memoized node's formula reads only its key's
    attributes, and that the memo gives what computing gives."""

    name = 'CheckMemo'

    def __init__(self):
        self.checked = set()

    def forward_preprocess(self, function, in_data):
        node = getattr(function, '_function', function)
        cls = type(node)
        if cls not in flops._KEYED_BY:
            return
        proxy = ReadAttributes(node)
        flops._FORMULAS[cls](proxy, in_data)
        assert proxy.read <= set(flops._KEYED_BY[cls]), cls
        assert flops.count(function, in_data) == flops._count(
            node, cls, in_data)
        self.checked.add(cls.__name__)


def linear_in(dtype):
    with chainer.using_config('dtype', dtype):
        return L.Linear(3, 4)


@pytest.mark.parametrize('predictor, x, t', [
    (CNN, numpy.zeros((2, 3, 8, 8), numpy.float32), numpy.zeros(2, 'i')),
    (RNN, numpy.zeros(3, numpy.int32), numpy.zeros(3, 'i')),
    (lambda: linear_in(numpy.float64), numpy.zeros((2, 3), numpy.float64),
     numpy.zeros(2, 'i'))])
def test_memoized_costs_depend_on_the_key_only(predictor, x, t):
    model = L.Classifier(predictor())
    hook = CheckMemo()
    with hook:
        for _ in range(2):  # the second pass reads the memo
            model(x, t).backward()
    assert {'LinearFunction', 'LinearGradWeight', 'Sum'} <= hook.checked


def test_memo_tells_shapes_dtypes_and_attributes_apart():
    hook = Counted()
    with hook:
        F.sum(numpy.zeros((2, 3), numpy.float32), axis=0)
        F.sum(numpy.zeros((2, 3), numpy.float32), axis=1)
        F.sum(numpy.zeros((2, 3), numpy.float64), axis=1)
        F.sum(numpy.zeros((3, 2), numpy.float64), axis=1)
    # Read 24 (48) bytes, write 3 or 2 (float32) or 2 or 3 (float64) sums.
    assert hook.costs('Sum') == [
        flops.Cost(6, 24 + 3 * 4), flops.Cost(6, 24 + 2 * 4),
        flops.Cost(6, 48 + 2 * 8), flops.Cost(6, 48 + 3 * 8)]

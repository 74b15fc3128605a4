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


def variable(*shape):
    return chainer.Variable(numpy.full(shape, 0.5, numpy.float32))


def backward_of(y):
    """The rows of y's backward alone (no loss node: gy is given)."""
    hook = Counted()
    y.grad = numpy.ones_like(y.array)
    with hook:
        y.backward()
    return hook


def test_convolution_nd_forward_and_backward():
    x = variable(2, 2, 4, 4, 4)
    conv = L.ConvolutionND(3, 2, 3, 2, stride=2, pad=1)
    hook = Counted()
    with hook:
        y = conv(x)
    # (4 + 2 - 2) // 2 + 1 = 3 per axis: 2 * 3 * 27 outputs, each of
    # 2 * 2 * 2 * 2 weights, plus a bias; x, W, b read, y written.
    outputs, k = 2 * 3 * 27, 2 * 8
    assert hook.rows == [('ConvolutionND', flops.Cost(
        2 * outputs * k + outputs, 4 * (256 + 48 + 3 + outputs)))]
    hook = backward_of(y)
    # The input gradient is a deconvolution: each of gy's elements times
    # W[o] (2, 2, 2, 2), into x's shape.
    assert hook.costs('DeconvolutionND') == [
        flops.Cost(2 * outputs * k, 4 * (outputs + 48 + 256))]
    # gW: each of gy's elements times its window of x (2 * 2 * 2 * 2).
    assert hook.costs('ConvolutionNDGradW') == [
        flops.Cost(2 * outputs * k, 4 * (256 + outputs + 48))]
    assert [c.flops for c in hook.costs('Sum')] == [outputs]  # gb


def test_deconvolution_nd_and_its_backward():
    x = variable(2, 2, 3, 3, 3)
    hook = forward_backward(L.DeconvolutionND(3, 2, 3, 2, stride=2, pad=1),
                            x)
    # Each of x's 108 elements times W[c] (3, 2, 2, 2); (3 - 1) * 2 + 2 - 2
    # = 4 per axis: 2 * 3 * 64 outputs, plus a bias.
    assert [c.flops for c in hook.costs('DeconvolutionND')] == [
        2 * 108 * 24 + 2 * 3 * 64]
    # Its input gradient is a convolution of gy (384) with W, into x.
    assert [c.flops for c in hook.costs('ConvolutionND')] == [
        2 * 108 * 24]
    assert [c.flops for c in hook.costs('ConvolutionNDGradW')] == [
        2 * 108 * 24]


@pytest.mark.parametrize('link, forward, data, grad_w', [
    (L.Convolution2D(4, 4, 3, pad=2, groups=2, dilate=2),
     'Convolution2DFunction', 'Deconvolution2DFunction', 'Convolution2DGradW'),
    (L.ConvolutionND(2, 4, 4, 3, pad=2, groups=2, dilate=2),
     'ConvolutionND', 'DeconvolutionND', 'ConvolutionNDGradW')])
def test_grouped_dilated_convolution(link, forward, data, grad_w):
    hook = forward_backward(link, variable(1, 4, 5, 5))
    # (5 + 4 - 5) + 1 = 5 per axis: 4 * 25 outputs, each of 4 / 2 * 3 * 3
    # weights (a dilated window has as many); the bias.
    assert [c.flops for c in hook.costs(forward)] == [2 * 100 * 18 + 100]
    assert [c.flops for c in hook.costs(data)] == [2 * 100 * 18]
    assert [c.flops for c in hook.costs(grad_w)] == [2 * 100 * 18]


def test_layer_normalization():
    x, gamma, beta = variable(3, 4), variable(4), variable(4)
    hook = Counted()
    with hook:
        y = F.layer_normalization(x, gamma, beta)
    # Per element: two means, x - mu, its square, normalise, scale, shift
    # (7); per row: var + eps, sqrt, 1 / std (and the means' divisions).
    assert hook.rows == [('LayerNormalization', flops.Cost(
        7 * 12 + 5 * 3, 4 * (12 + 4 + 4 + 12)))]
    hook = backward_of(y)
    # Its backward recomputes the forward with functions, then applies the
    # chain rule with functions (layer_normalization.py, Chainer 7.8.1):
    recompute = 15 + 12 + 12 + 15 + 3 + 3 + 3 + 12  # Mean, Sub, Square,
    # Mean, AddConstant, Sqrt, DivFromConstant, Mul (x_hat)
    chain = (12 + 24 + 12 + 24 + 12  # g_beta, g_gamma, g_x_hat, g_inv_std,
             # g_x_mu_1: sums and products of (3, 4)
             + 9 + 6 + 3 + 15  # g_std, g_var, g_squ_x_mu, g_x_mu_2
             + 12 + 15 + 3 + 12)  # g_x_1, g_mu, g_x_2, g_x
    assert sum([c.flops for n, c in hook.rows]) == recompute + chain
    assert {n for n, c in hook.rows} == {
        'Mean', 'Sub', 'Square', 'AddConstant', 'Sqrt', 'DivFromConstant',
        'Mul', 'MulConstant', 'Sum', 'Add'}


@pytest.mark.parametrize('product', ['MatMul', 'BatchMatMul'])
def test_matmul_with_a_batch(product):
    a, b = variable(2, 3, 4), variable(2, 4, 5)
    hook = Counted()
    with hook:
        if product == 'MatMul':
            y = F.matmul(a, b)
        else:
            with pytest.warns(DeprecationWarning):
                y = F.batch_matmul(a, b)
    # 2 products of (3, 4) by (4, 5): 2 * 3 * 5 outputs of 4 multiply-adds
    assert hook.rows == [(product, flops.Cost(
        2 * 2 * 3 * 4 * 5, 4 * (24 + 40 + 30)))]
    hook = backward_of(y)
    if product == 'MatMul':  # ga = gy b^T, gb = a^T gy: two MatMuls
        assert hook.rows == [
            ('MatMul', flops.Cost(2 * 2 * 3 * 5 * 4, 4 * (30 + 40 + 24))),
            ('MatMul', flops.Cost(2 * 2 * 4 * 3 * 5, 4 * (24 + 30 + 40)))]
    else:  # both in one node
        assert hook.rows == [('BatchMatMulGrad', flops.Cost(
            2 * 2 * 2 * 3 * 4 * 5, 4 * (24 + 40 + 30 + 24 + 40)))]


@pytest.mark.parametrize('a, b, expected', [
    ((4,), (4, 5), 2 * 4 * 5),  # a row vector
    ((3, 4), (4,), 2 * 3 * 4),  # a column vector
    ((4,), (4,), 2 * 4),  # a dot product
    ((3, 4), (2, 4, 5), 2 * 2 * 3 * 4 * 5)])  # a broadcast
def test_matmul_of_vectors_and_broadcasts(a, b, expected):
    hook = Counted()
    with hook:
        F.matmul(variable(*a), variable(*b))
    assert [c.flops for c in hook.costs('MatMul')] == [expected]


def test_mean():
    x = variable(3, 4)
    hook = Counted()
    with hook:
        y = F.mean(x, axis=1)
    # 12 additions, 3 divisions; x read, 3 means written.
    assert hook.rows == [('Mean', flops.Cost(12 + 3, 4 * (12 + 3)))]
    hook = backward_of(y)  # gy / 4, broadcast back to x's shape
    assert hook.rows == [
        ('MulConstant', flops.Cost(3, 4 * 6)),
        ('Reshape', flops.Cost(0, 4 * 6)),
        ('BroadcastTo', flops.Cost(0, 4 * (3 + 12)))]


def test_n_step_lstm():
    lstm = L.NStepLSTM(1, 3, 2, 0.0)
    xs = [variable(2, 3), variable(1, 3)]  # two steps of batch 2, then 1
    hook = Counted()
    with hook:
        hy, cy, ys = lstm(None, None, xs)
        F.sum(F.concat(ys, axis=0)).backward()

    def flops_of(name):
        return sum([c.flops for c in hook.costs(name)])

    # Per step of batch b, 8 gate units: x (3) and h (2) projected, each
    # with a bias: 2 * b * (3 + 2) * 8 + 2 * b * 8 = 96 * b.
    assert flops_of('LinearFunction') == 96 * 2 + 96 * 1
    assert flops_of('LSTM') == 9 * 2 * 2 + 9 * 1 * 2
    # c (2, 2) and the gates (2, 8) read, c and h written.
    assert hook.costs('LSTM')[0] == flops.Cost(9 * 4, 4 * (4 + 16 + 8))
    assert flops_of('LSTMGrad') == 14 * 2 * 2 + 14 * 1 * 2
    # gx and gh of each step: 2 * b * 8 * (3 + 2) = 80 * b; gW as many.
    assert flops_of('LinearGradData') == 80 * 2 + 80 * 1
    assert flops_of('LinearGradWeight') == 80 * 2 + 80 * 1
    # Sorting, transposing, splitting and stacking: bytes only.
    for name in ('TransposeSequence', 'Separate', 'Stack', 'SplitAxis',
                 'Concat', 'Permutate', 'Reshape'):
        costs = hook.costs(name)
        assert costs and all(c.flops == 0 < c.bytes for c in costs), name
    assert [n for n, cost in hook.rows if cost is None] == []


@pytest.mark.parametrize('function, forward, gradient, per_element', [
    (F.softmax, 'Softmax', '_SoftmaxGrad', (3, 4)),
    (F.log_softmax, 'LogSoftmax', 'LogSoftmaxGrad', (4, 4)),
    (F.leaky_relu, 'LeakyReLU', '_LeakyReLUGrad', (2, 2)),
    (F.softplus, 'Softplus', 'SoftplusGrad', (8, 6))])
def test_activation_gradients(function, forward, gradient, per_element):
    x = variable(3, 4)
    hook = Counted()
    with hook:
        y = function(x)
    assert hook.rows == [(forward, flops.Cost(per_element[0] * 12, 4 * 24))]
    hook = backward_of(y)
    # softmax: y gy, its sum, y times the sum, minus (4); log_softmax: the
    # sum of gy, exp(y), times, minus (4), from y and gy; leaky_relu: a
    # compare and a scale (2), from gy (the mask is the node's); softplus:
    # 1 - 1 / (1 + exp(beta x)), times gy (6), from x and gy.
    inputs = 1 if gradient == '_LeakyReLUGrad' else 2
    assert hook.rows == [(gradient, flops.Cost(
        per_element[1] * 12, 4 * 12 * (inputs + 1)))]


@pytest.mark.parametrize('index', [
    (1,), (slice(None), [0, 2]), (Ellipsis, None, 1), ([0, 1], [2, 3]),
    (numpy.array([True, False, True]),)])
def test_get_item_writes_what_it_selects(index):
    x = variable(3, 4)
    hook = Counted()
    with hook:
        y = x[index]
    assert hook.rows == [('GetItem', flops.Cost(0, 4 * (12 + y.size)))]
    hook = backward_of(y)  # a scatter-add of gy into zeros of x's shape
    assert hook.rows == [('GetItemGrad', flops.Cost(
        y.size, 4 * (y.size + 12)))]


def test_elementwise_nodes_count_the_broadcast_output():
    hook = Counted()
    with hook:
        variable(3, 1) * variable(4)  # an outer product: 12 products
        F.where(numpy.ones((3, 4), bool), variable(4), variable(3, 1))
    assert hook.rows == [('Mul', flops.Cost(12, 4 * (3 + 4 + 12))),
                         ('Where', flops.Cost(12, 4 * (4 + 3 + 12)))]


def test_cast_writes_in_the_new_type():
    hook = Counted()
    with hook:
        F.cast(variable(3, 4), numpy.float16)
    assert hook.rows == [('Cast', flops.Cost(0, 4 * 12 + 2 * 12))]


class Unknown(chainer.FunctionNode):

    def forward(self, inputs):
        return inputs[0] * 2,


def test_a_node_without_a_formula_is_unknown():
    x = numpy.zeros(3, numpy.float32)
    hook = Counted()
    with hook:
        Unknown().apply((x,))
    assert hook.rows == [('Unknown', None)]


def test_a_formula_that_fails_counts_as_unknown_with_one_warning(
        monkeypatch):
    def fails(node, in_data):
        raise IndexError('tuple index out of range')

    monkeypatch.setitem(flops.FORMULAS, Unknown,
                        flops._registry.Formula(fails, None))
    monkeypatch.setattr(flops, '_failed', set())
    x = numpy.zeros(3, numpy.float32)
    hook = Counted()
    with pytest.warns(RuntimeWarning, match=r'of Unknown failed on inputs '
                      r'of shapes \[\(3,\)\] \(IndexError'):
        with hook:
            Unknown().apply((x,))
    with hook:  # once per class
        Unknown().apply((x,))
    assert hook.rows == [('Unknown', None), ('Unknown', None)]


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


def n_step(link, lstm=False, hx=False):
    def run():
        n = 2 if 'Bi' in link.__name__ else 1
        model = link(2, 3, 2, 0.5)  # two layers: a dropout between them
        xs = [variable(3, 3), variable(2, 3), variable(1, 3)]
        h = variable(2 * n, 3, 2) if hx else None
        c = variable(2 * n, 3, 2) if hx else None
        out = model(h, c, xs) if lstm else model(h, xs)
        return F.concat(out[-1], axis=0), out[0]
    return run


def evaluated(link, x):
    with chainer.using_config('train', False):
        return link(x)


def with_mask(x):
    return F.where(numpy.arange(12).reshape(3, 4) % 2 == 0, x, x * 2)


def labels(*shape):
    return numpy.arange(numpy.prod(shape)).reshape(shape).astype('i') % 2


#: The layers and functions whose every node, forward and backward (on a
#: CPU), has a formula: {name: () -> the outputs to back-propagate}.
LAYERS_AND_FUNCTIONS = {
    'ConvolutionND': lambda: L.ConvolutionND(3, 2, 3, 2)(
        variable(1, 2, 3, 3, 3)),
    'ConvolutionND grouped, dilated': lambda: L.ConvolutionND(
        1, 4, 2, 2, groups=2, dilate=2)(variable(1, 4, 5)),
    'DeconvolutionND': lambda: L.DeconvolutionND(3, 2, 3, 2, stride=2)(
        variable(1, 2, 2, 2, 2)),
    'Convolution2D grouped, dilated': lambda: L.Convolution2D(
        4, 2, 3, groups=2, dilate=2)(variable(1, 4, 5, 5)),
    'Deconvolution2D grouped': lambda: L.Deconvolution2D(
        4, 2, 3, groups=2)(variable(1, 4, 3, 3)),
    'LayerNormalization': lambda: L.LayerNormalization()(variable(3, 4)),
    'BatchNormalization': lambda: (L.BatchNormalization(2)(variable(3, 2)),
                                   evaluated(L.BatchNormalization(2),
                                             variable(3, 2))),
    'EmbedID, accuracy': lambda: (
        L.EmbedID(5, 2)(numpy.array([1, 3], 'i')),
        F.accuracy(variable(3, 4), labels(3))),
    'matmul': lambda: F.matmul(variable(2, 3, 4), variable(4, 5)),
    'matmul of vectors': lambda: (F.matmul(variable(4), variable(4, 5)),
                                  F.matmul(variable(3, 4), variable(4))),
    'batch_matmul': lambda: F.batch_matmul(variable(2, 3, 4),
                                           variable(2, 4, 5)),
    'mean': lambda: (F.mean(variable(3, 4)), F.mean(variable(3, 4), 1)),
    'NStepLSTM': n_step(L.NStepLSTM, lstm=True),
    'NStepLSTM with hx, cx': n_step(L.NStepLSTM, lstm=True, hx=True),
    'NStepBiLSTM': n_step(L.NStepBiLSTM, lstm=True),
    'NStepGRU': n_step(L.NStepGRU),
    'NStepBiGRU': n_step(L.NStepBiGRU, hx=True),
    'NStepRNNTanh': n_step(L.NStepRNNTanh),
    'NStepBiRNNTanh': n_step(L.NStepBiRNNTanh, hx=True),
    'NStepRNNReLU': n_step(L.NStepRNNReLU),
    'NStepBiRNNReLU': n_step(L.NStepBiRNNReLU),
    'softmax, log_softmax': lambda: (F.softmax(variable(3, 4)),
                                     F.log_softmax(variable(3, 4))),
    'leaky_relu, elu': lambda: (F.leaky_relu(variable(3, 4) - 1),
                                F.elu(variable(3, 4) - 1)),
    'sigmoid, tanh': lambda: F.sigmoid(variable(3, 4)) * F.tanh(
        variable(3, 4)),
    'softplus': lambda: F.softplus(variable(3, 4)),
    'pooling': lambda: (F.average_pooling_nd(variable(1, 2, 4, 4, 4), 2),
                        F.average_pooling_1d(variable(1, 2, 4), 2),
                        F.average_pooling_2d(variable(1, 2, 4, 4), 2),
                        F.max_pooling_2d(variable(1, 2, 4, 4), 2),
                        F.max_pooling_nd(variable(1, 2, 4, 4, 4), 2)),
    'powers': lambda: (variable(3, 4) ** 2, 2 ** variable(3, 4),
                       variable(3, 4) ** variable(1, 4),
                       F.square(variable(3, 4)), F.sqrt(variable(3, 4)),
                       F.rsqrt(variable(3, 4))),
    'exp, log': lambda: (F.exp(variable(3, 4)), F.log(variable(3, 4)),
                         F.log2(variable(3, 4)), F.log10(variable(3, 4))),
    'arithmetic': lambda: (1 - variable(3, 4) / variable(1, 4),
                           2 / variable(3, 4) - variable(4) * 3,
                           abs(variable(3, 4) - 1), -variable(3, 4),
                           F.add(variable(3, 4), variable(3, 4),
                                 variable(3, 4))),
    'broadcast': lambda: (F.broadcast_to(variable(1, 4), (3, 4)),
                          F.broadcast(variable(1, 4), variable(3, 1))),
    'concat, split_axis': lambda: (
        F.concat((variable(3, 4), variable(2, 4)), axis=0),
        F.split_axis(variable(3, 4), 2, axis=1)),
    'stacks': lambda: (F.hstack((variable(3, 4), variable(3, 2))),
                       F.vstack((variable(3, 4), variable(2, 4))),
                       F.dstack((variable(3, 4), variable(3, 4))),
                       F.stack((variable(3, 4), variable(3, 4)))),
    'get_item': lambda: (variable(3, 4)[1:, ::2], variable(3, 4)[[0, 2]]),
    'views': lambda: (F.expand_dims(variable(3, 4), 1),
                      F.squeeze(variable(3, 1, 4)),
                      F.swapaxes(variable(3, 4), 0, 1),
                      F.rollaxis(variable(2, 3, 4), 2),
                      F.transpose(variable(3, 4)),
                      F.reshape(variable(3, 4), (12,))),
    'cast, where': lambda: (F.cast(variable(3, 4), numpy.float64),
                            with_mask(variable(3, 4))),
    'maximum, minimum, clip': lambda: (
        F.maximum(variable(3, 4), variable(4)),
        F.minimum(variable(3, 4), variable(3, 4)),
        F.clip(variable(3, 4), 0.2, 0.7), F.clip(variable(3, 4), None, .7)),
    'losses': lambda: (
        F.select_item(variable(3, 4), numpy.array([0, 1, 3], 'i')),
        F.mean_squared_error(variable(3, 4), variable(3, 4)),
        F.sigmoid_cross_entropy(variable(3, 4), labels(3, 4)),
        F.sigmoid_cross_entropy(variable(3, 4), labels(3, 4), reduce='no'),
        F.softmax_cross_entropy(variable(3, 4), labels(3))),
}


def back_propagate(outputs):
    """Back-propagates the sum of ``outputs`` (nested tuples of variables)."""
    sums = []
    for y in outputs if isinstance(outputs, tuple) else (outputs,):
        if isinstance(y, tuple):
            sums += [F.sum(F.stack([F.sum(z) for z in y]))]
        else:
            sums += [F.sum(F.cast(y, numpy.float32))]
    F.sum(F.stack(sums)).backward()


@pytest.mark.filterwarnings('ignore::DeprecationWarning')  # batch_matmul
@pytest.mark.parametrize('name', sorted(LAYERS_AND_FUNCTIONS))
def test_every_node_of_these_layers_and_functions_is_counted(name):
    hook = Counted()
    with hook:
        back_propagate(LAYERS_AND_FUNCTIONS[name]())
    assert [n for n, cost in hook.rows if cost is None] == []
    assert len(hook.rows) > 5


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
        formula, keyed_by = flops.FORMULAS.get(cls, (None, None))
        if keyed_by is None:
            return
        proxy = ReadAttributes(node)
        formula(proxy, in_data)
        assert proxy.read <= set(keyed_by), cls
        assert flops.count(function, in_data) == flops._count(
            node, cls, formula, in_data)
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


def test_formulas_return_named_work():
    # Every formula's result has named fields, not a position to know.
    x = numpy.ones((2, 3), numpy.float32)
    node = chainer.functions.math.basic_math.Add()
    work = flops.FORMULAS[type(node)].function(node, (x, x))
    assert isinstance(work, flops.Work)
    assert (work.flops, work.outputs) == (6, 6)

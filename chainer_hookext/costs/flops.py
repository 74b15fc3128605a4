"""FLOPs and bytes of one function node, from its inputs.

:func:`count` looks a node's class up in a table of formulas (one dict
lookup) and computes, from the shapes of the inputs Chainer passes to a
function hook's ``forward_preprocess`` and the node's own attributes:

* ``flops``: 2 per multiply-add (as ``torch.utils.flop_counter`` and
  DeepSpeed count), 1 per output element for elementwise work, 0 for
  reshapes, views, transposes and copies;
* ``bytes``: the inputs (parameters included: they are inputs of the
  node) read once and the outputs written once.

A backward is counted from the nodes Chainer applies in it
(``LinearGradData``, ``LinearGradWeight``, ``Convolution2DGradW``, the
``Deconvolution2DFunction`` that computes a convolution's input
gradient...), never as a factor of the forward.  A class without a
formula gives ``None``: the caller counts it as unknown, never as zero.
``docs/flops.md`` has the table.
"""

import collections
import math

from chainer import function
from chainer.functions.activation import leaky_relu
from chainer.functions.activation import log_softmax
from chainer.functions.activation import relu
from chainer.functions.activation import sigmoid
from chainer.functions.activation import softmax
from chainer.functions.activation import tanh
from chainer.functions.array import reshape
from chainer.functions.array import transpose
from chainer.functions.connection import convolution_2d
from chainer.functions.connection import deconvolution_2d
from chainer.functions.connection import embed_id
from chainer.functions.connection import linear
from chainer.functions.evaluation import accuracy
from chainer.functions.loss import softmax_cross_entropy
from chainer.functions.math import basic_math
from chainer.functions.math import matmul
from chainer.functions.math import sum as sum_module
from chainer.functions.noise import dropout
from chainer.functions.normalization import batch_normalization
from chainer.functions.pooling import average_pooling_2d
from chainer.functions.pooling import max_pooling_nd
from chainer.functions.rnn import lstm
from chainer.utils import conv


#: The cost of one node: FLOPs and bytes moved.
Cost = collections.namedtuple('Cost', ('flops', 'bytes'))


def count(node, in_data):
    """Returns the :class:`Cost` of ``node`` applied to ``in_data``.

    Args:
        node (~chainer.FunctionNode): The node, as a function hook gets it.
        in_data (tuple of arrays): Its inputs (``None`` for an input not
            kept).

    Returns:
        Cost: Or ``None`` when its class has no formula.
    """
    # Every node of a training iteration passes here: most are looked up
    # in the memo by their inputs' shapes and dtypes (and the attributes
    # of _KEYED_BY), a third of what computing them takes.
    cls = type(node)
    if cls is function.FunctionAdapter:  # an old-style Function
        node = node._function
        cls = type(node)
    attributes = _KEYED_BY.get(cls)
    if attributes is None:
        return _count(node, cls, in_data)
    try:
        if len(in_data) == 2:
            a, b = in_data
            key = (cls, a.shape, a.dtype, b.shape, b.dtype)
        elif len(in_data) == 3:
            a, b, c = in_data
            key = (cls, a.shape, a.dtype, b.shape, b.dtype, c.shape, c.dtype)
        elif len(in_data) == 1:
            a, = in_data
            key = (cls, a.shape, a.dtype)
        else:
            return _count(node, cls, in_data)
        if attributes:
            key += tuple([getattr(node, name) for name in attributes])
        cost = _memo.get(key)
    except (AttributeError, TypeError):  # an input not kept; unhashable
        return _count(node, cls, in_data)
    if cost is None:
        if len(_memo) >= _MEMO_SIZE:  # shapes that change all the time
            _memo.clear()
        cost = _memo[key] = _count(node, cls, in_data)
    return cost


def _count(node, cls, in_data):
    formula = _FORMULAS.get(cls)
    if formula is None:
        return None
    flops, outputs = formula(node, in_data)
    read = 0
    itemsize = 0  # of the first floating input: the outputs'
    for x in in_data:
        if x is not None:
            read += x.nbytes
            if not itemsize and x.dtype.kind == 'f':
                itemsize = x.itemsize
    return _new_cost(Cost, (flops, read + outputs * (itemsize or 4)))


def name_of(node):
    """Returns the name of ``node``'s class, as the report lists unknowns."""
    if type(node) is function.FunctionAdapter:
        node = node._function
    return type(node).__name__


_new_cost = tuple.__new__  # Cost(...) without namedtuple's Python __new__
_memo = {}  # {(class, shape, dtype, ..., attributes): Cost}
_MEMO_SIZE = 4096


# -- formulas: (node, in_data) -> (flops, output elements) -------------------
def _linear(node, in_data):
    x, W = in_data[:2]
    n, out = x.size // x.shape[-1], W.shape[0]
    flops = 2 * n * x.shape[-1] * out + (n * out if len(in_data) > 2 else 0)
    return flops, n * out


def _linear_grad_data(node, in_data):
    W, gy = in_data  # gx = gy W
    n = gy.size // gy.shape[-1]
    return 2 * n * W.shape[0] * W.shape[1], n * W.shape[1]


def _linear_grad_weight(node, in_data):
    x, gy = in_data  # gW = gy^T x
    n = x.size // x.shape[-1]
    return 2 * n * x.shape[-1] * gy.shape[-1], x.shape[-1] * gy.shape[-1]


def _convolution_2d(node, in_data):
    x, W = in_data[:2]
    n, _, h, w = x.shape
    kh, kw = W.shape[2:]
    out_h = conv.get_conv_outsize(h, kh, node.sy, node.ph, node.cover_all,
                                  node.dy)
    out_w = conv.get_conv_outsize(w, kw, node.sx, node.pw, node.cover_all,
                                  node.dx)
    outputs = n * W.shape[0] * out_h * out_w
    flops = 2 * outputs * math.prod(W.shape[1:])
    return flops + (outputs if len(in_data) > 2 else 0), outputs


def _convolution_2d_grad_w(node, in_data):
    x, gy = in_data
    per_output = x.shape[1] // node.groups * node.kh * node.kw
    return 2 * gy.size * per_output, math.prod(node.W_shape)


def _deconvolution_2d(node, in_data):
    x, W = in_data[:2]  # each input element times W[c] (out/g, kh, kw)
    flops = 2 * x.size * math.prod(W.shape[1:])
    n, _, h, w = x.shape
    kh, kw = W.shape[2:]
    out_h = node.outh if node.outh is not None else conv.get_deconv_outsize(
        h, kh, node.sy, node.ph, d=node.dy)
    out_w = node.outw if node.outw is not None else conv.get_deconv_outsize(
        w, kw, node.sx, node.pw, d=node.dx)
    outputs = n * W.shape[1] * node.groups * out_h * out_w
    return flops + (outputs if len(in_data) > 2 else 0), outputs


def _elementwise(per_element):
    def formula(node, in_data):
        outputs = 0  # the largest input: the output, broadcast
        for x in in_data:
            if x is not None and x.size > outputs:
                outputs = x.size
        return per_element * outputs, outputs
    return formula


def _copy(node, in_data):  # reshapes, views, transposes: bytes only
    return 0, in_data[0].size


def _reduction(node, in_data):
    x = in_data[0]
    axis = getattr(node, 'axis', None)
    if axis is None:
        return x.size, 1
    reduced = 1
    for a in (axis if isinstance(axis, tuple) else (axis,)):
        reduced *= x.shape[a]
    return x.size, x.size // max(1, reduced)


def _batch_normalization(per_element):
    def formula(node, in_data):
        x = in_data[0]
        return per_element * x.size, x.size
    return formula


def _embed_id(node, in_data):
    x, W = in_data
    return 0, x.size * W.shape[1]  # a gather: bytes only


def _embed_id_grad(node, in_data):
    x, gy = in_data  # a scatter-add of gy into gW
    return gy.size, node.w_shape[0] * node.w_shape[1]


def _lstm(node, in_data):
    c, x = in_data  # 4 gates: 3 sigmoids, 2 tanh, 3 mul, 1 add per unit
    return 9 * c.size, 2 * c.size


def _lstm_grad(node, in_data):
    c = in_data[0]
    return 14 * c.size, 5 * c.size


def _matmul(node, in_data):
    a, b = in_data
    m = a.shape[-1] if node.transa else a.shape[-2]
    k = a.shape[-2] if node.transa else a.shape[-1]
    n = b.shape[-2] if node.transb else b.shape[-1]
    batch = a.size // (a.shape[-1] * a.shape[-2]) if a.ndim > 2 else 1
    return 2 * batch * m * k * n, batch * m * n


def _softmax_cross_entropy(node, in_data):
    x = in_data[0]  # log-softmax (4 per element) and the picked mean
    return 4 * x.size + x.shape[0], 1


def _softmax_cross_entropy_grad(node, in_data):
    x = in_data[0]  # softmax (3 per element), minus one-hot, scale
    return 5 * x.size, x.size


def _pooling(node, in_data):
    x = in_data[0]
    outputs = _pooled_size(node, x)
    return outputs * _window(node), outputs


def _window(node):
    return node.kh * node.kw if hasattr(node, 'kh') else math.prod(node.ksize)


def _pooled_size(node, x):
    ksize = (node.kh, node.kw) if hasattr(node, 'kh') else node.ksize
    stride = (node.sy, node.sx) if hasattr(node, 'sy') else node.stride
    pad = (node.ph, node.pw) if hasattr(node, 'ph') else node.pad
    cover_all = getattr(node, 'cover_all', False)
    size = x.shape[0] * x.shape[1]
    for d, k, s, p in zip(x.shape[2:], ksize, stride, pad):
        size *= conv.get_conv_outsize(d, k, s, p, cover_all)
    return size


def _pooling_grad(node, in_data):
    gy = in_data[0]  # each output's gradient spread over its window
    forward = getattr(node, 'func', None) or node.apool2d
    window = _window(forward)
    in_shape = getattr(forward, '_in_shape', None)
    outputs = gy.size * window if in_shape is None else math.prod(in_shape)
    return gy.size * window, outputs


_FORMULAS = {
    linear.LinearFunction: _linear,
    linear.LinearGradData: _linear_grad_data,
    linear.LinearGradWeight: _linear_grad_weight,
    convolution_2d.Convolution2DFunction: _convolution_2d,
    convolution_2d.Convolution2DGradW: _convolution_2d_grad_w,
    deconvolution_2d.Deconvolution2DFunction: _deconvolution_2d,
    embed_id.EmbedIDFunction: _embed_id,
    embed_id.EmbedIDGrad: _embed_id_grad,
    lstm.LSTM: _lstm,
    lstm.LSTMGrad: _lstm_grad,
    matmul.MatMul: _matmul,
    batch_normalization.BatchNormalization: _batch_normalization(7),
    batch_normalization.BatchNormalizationGrad: _batch_normalization(10),
    batch_normalization.FixedBatchNormalization: _batch_normalization(4),
    batch_normalization.FixedBatchNormalizationGrad: (
        _batch_normalization(6)),
    softmax_cross_entropy.SoftmaxCrossEntropy: _softmax_cross_entropy,
    softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop: (
        _softmax_cross_entropy_grad),
    max_pooling_nd.MaxPoolingND: _pooling,
    max_pooling_nd.MaxPoolingNDGrad: _pooling_grad,
    average_pooling_2d.AveragePooling2D: _pooling,
    average_pooling_2d.AveragePooling2DGrad: _pooling_grad,
    sum_module.Sum: _reduction,
    accuracy.Accuracy: _elementwise(1),
    relu.ReLU: _elementwise(1),
    relu.ReLUGrad2: _elementwise(1),
    sigmoid.Sigmoid: _elementwise(4),
    sigmoid.SigmoidGrad: _elementwise(3),
    tanh.Tanh: _elementwise(4),
    tanh.TanhGrad: _elementwise(3),
    leaky_relu.LeakyReLU: _elementwise(2),
    softmax.Softmax: _elementwise(3),
    log_softmax.LogSoftmax: _elementwise(4),
    dropout.Dropout: _elementwise(1),
    dropout.DropoutGrad: _elementwise(1),
    basic_math.Add: _elementwise(1),
    basic_math.AddConstant: _elementwise(1),
    basic_math.Sub: _elementwise(1),
    basic_math.Mul: _elementwise(1),
    basic_math.MulConstant: _elementwise(1),
    basic_math.Div: _elementwise(1),
    basic_math.Neg: _elementwise(1),
    reshape.Reshape: _copy,
    transpose.Transpose: _copy,
}


#: The classes whose cost is memoized: the cost of such a node depends only
#: on its inputs' shapes and dtypes, and on the node's attributes named
#: here (``tests/costs/test_flops.py`` checks that its formula reads no
#: other).  Others are computed each time.
_KEYED_BY = {cls: () for cls in (
    linear.LinearFunction, linear.LinearGradData, linear.LinearGradWeight,
    embed_id.EmbedIDFunction, lstm.LSTM, lstm.LSTMGrad,
    batch_normalization.BatchNormalization,
    batch_normalization.BatchNormalizationGrad,
    batch_normalization.FixedBatchNormalization,
    batch_normalization.FixedBatchNormalizationGrad,
    softmax_cross_entropy.SoftmaxCrossEntropy,
    softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop,
    accuracy.Accuracy, relu.ReLU, relu.ReLUGrad2, sigmoid.Sigmoid,
    sigmoid.SigmoidGrad, tanh.Tanh, tanh.TanhGrad, leaky_relu.LeakyReLU,
    softmax.Softmax, log_softmax.LogSoftmax, dropout.Dropout,
    dropout.DropoutGrad, basic_math.Add, basic_math.AddConstant,
    basic_math.Sub, basic_math.Mul, basic_math.MulConstant, basic_math.Div,
    basic_math.Neg, reshape.Reshape, transpose.Transpose)}
_KEYED_BY.update({
    sum_module.Sum: ('axis',),
    matmul.MatMul: ('transa', 'transb'),
    embed_id.EmbedIDGrad: ('w_shape',),
})

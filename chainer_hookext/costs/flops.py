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
gradient, the ``Mean``, ``Sub``, ``Mul``... that ``LayerNormalization``'s
backward is written with), never as a factor of the forward.  A class
without a formula, or whose formula fails on a node (a warning, once per
class), gives ``None``: the caller counts it as unknown, never as zero.
``docs/flops.md`` has the table.
"""

import collections
import math
import warnings

import numpy

from chainer import function
from chainer.functions.activation import elu
from chainer.functions.activation import leaky_relu
from chainer.functions.activation import log_softmax
from chainer.functions.activation import relu
from chainer.functions.activation import sigmoid
from chainer.functions.activation import softmax
from chainer.functions.activation import softplus
from chainer.functions.activation import tanh
from chainer.functions.array import broadcast
from chainer.functions.array import cast
from chainer.functions.array import concat
from chainer.functions.array import dstack
from chainer.functions.array import expand_dims
from chainer.functions.array import get_item
from chainer.functions.array import hstack
from chainer.functions.array import permutate
from chainer.functions.array import reshape
from chainer.functions.array import rollaxis
from chainer.functions.array import select_item
from chainer.functions.array import separate
from chainer.functions.array import split_axis
from chainer.functions.array import squeeze
from chainer.functions.array import stack
from chainer.functions.array import swapaxes
from chainer.functions.array import transpose
from chainer.functions.array import transpose_sequence
from chainer.functions.array import vstack
from chainer.functions.array import where
from chainer.functions.connection import convolution_2d
from chainer.functions.connection import convolution_nd
from chainer.functions.connection import deconvolution_2d
from chainer.functions.connection import deconvolution_nd
from chainer.functions.connection import embed_id
from chainer.functions.connection import linear
from chainer.functions.evaluation import accuracy
from chainer.functions.loss import mean_squared_error
from chainer.functions.loss import sigmoid_cross_entropy
from chainer.functions.loss import softmax_cross_entropy
from chainer.functions.math import average
from chainer.functions.math import basic_math
from chainer.functions.math import clip
from chainer.functions.math import exponential
from chainer.functions.math import matmul
from chainer.functions.math import maximum
from chainer.functions.math import minimum
from chainer.functions.math import sqrt
from chainer.functions.math import square
from chainer.functions.math import sum as sum_module
from chainer.functions.math import tensordot
from chainer.functions.noise import dropout
from chainer.functions.normalization import batch_normalization
from chainer.functions.normalization import layer_normalization
from chainer.functions.pooling import average_pooling_2d
from chainer.functions.pooling import average_pooling_nd
from chainer.functions.pooling import max_pooling_nd
from chainer.functions.rnn import lstm
from chainer.utils import conv

from chainer_hookext import _chainer

#: The cost of one node: FLOPs and bytes moved.
Cost = collections.namedtuple('Cost', ('flops', 'bytes'))


def count(node, in_data):
    """Returns the :class:`Cost` of ``node`` applied to ``in_data``.

    Args:
        node (~chainer.FunctionNode): The node, as a function hook gets it.
        in_data (tuple of arrays): Its inputs (``None`` for an input not
            kept).

    Returns:
        Cost: Or ``None`` when its class has no formula or its formula
        failed.
    """
    # Every node of a training iteration passes here: most are looked up
    # in the memo by their inputs' shapes and dtypes (and the attributes
    # of _KEYED_BY), a third of what computing them takes.
    cls = type(node)
    if cls is function.FunctionAdapter:  # an old-style Function
        node = node.function
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
    try:
        flops, outputs = formula(node, in_data)
    except Exception as e:  # never the training's end: an unknown
        if cls not in _failed:
            _failed.add(cls)
            warnings.warn(
                'chainer_hookext: the FLOPs formula of {} failed on inputs '
                'of shapes {} ({}: {}); its nodes are counted as unknown. '
                'Please report it.'.format(
                    cls.__name__,
                    [getattr(x, 'shape', None) for x in in_data],
                    type(e).__name__, e), RuntimeWarning, stacklevel=2)
        return None
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
        node = node.function
    return type(node).__name__


_new_cost = tuple.__new__  # Cost(...) without namedtuple's Python __new__
_memo = {}  # {(class, shape, dtype, ..., attributes): Cost}
_failed = set()  # the classes whose formula raised: warned once
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


def _convolution_nd(node, in_data):
    x, W = in_data[:2]
    outputs = x.shape[0] * W.shape[0]
    for d, k, s, p, di in zip(x.shape[2:], W.shape[2:], node.stride,
                              node.pad, node.dilate):
        outputs *= conv.get_conv_outsize(d, k, s, p, node.cover_all, di)
    flops = 2 * outputs * math.prod(W.shape[1:])
    return flops + (outputs if len(in_data) > 2 else 0), outputs


def _convolution_nd_grad_w(node, in_data):
    x, gy = in_data  # each of gy's elements times its window of x
    per_output = x.shape[1] // node.groups * math.prod(node.ksize)
    return 2 * gy.size * per_output, gy.shape[1] * per_output


def _deconvolution_nd(node, in_data):
    x, W = in_data[:2]  # each input element times W[c] (out/g, k...)
    flops = 2 * x.size * math.prod(W.shape[1:])
    outs = node.outs  # set by a first forward
    if outs is None:
        outs = [conv.get_deconv_outsize(d, k, s, p, d=di)
                for d, k, s, p, di in zip(x.shape[2:], W.shape[2:],
                                          node.stride, node.pad, node.dilate)]
    outputs = x.shape[0] * W.shape[1] * node.groups * math.prod(outs)
    return flops + (outputs if len(in_data) > 2 else 0), outputs


def _elementwise(per_element):
    def formula(node, in_data):
        outputs = _broadcast_size([x.shape for x in in_data if x is not None])
        return per_element * outputs, outputs
    return formula


def _broadcast_size(shapes):
    """The size of the output of an elementwise node of inputs of shapes."""
    first = shapes[0]
    for shape in shapes[1:]:
        if shape != first:
            try:  # (3, 1) * (4,) is 12 elements
                return math.prod(numpy.broadcast_shapes(*shapes))
            except ValueError:  # not broadcast (Accuracy): the largest
                return max([math.prod(shape) for shape in shapes])
    return math.prod(first)


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
    a, b = in_data  # a vector is a row on the left, a column on the right
    m, k = (1, a.shape[0]) if a.ndim == 1 else a.shape[-2:]
    if node.transa and a.ndim > 1:
        m, k = k, m
    n = 1 if b.ndim == 1 else b.shape[-2] if node.transb else b.shape[-1]
    batch = math.prod(numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    return 2 * batch * m * k * n, batch * m * n


def _batch_matmul_shapes(node, a, b):
    batch = a.shape[0]  # (B, M, ...) as B matrices M x rest
    m, k = a.shape[1], a.size // (batch * a.shape[1])
    if node.transa:
        m, k = k, m
    n = b.shape[1] if node.transb else b.size // (batch * b.shape[1])
    return batch, m, k, n


def _batch_matmul(node, in_data):
    batch, m, k, n = _batch_matmul_shapes(node, *in_data)
    return 2 * batch * m * k * n, batch * m * n


def _batch_matmul_grad(node, in_data):
    a, b, gy = in_data  # ga = gy b^T and gb = a^T gy: two products
    batch, m, k, n = _batch_matmul_shapes(node, a, b)
    return 4 * batch * m * k * n, a.size + b.size


def _tensordot(node, in_data):
    a, b = in_data  # (a.size / K) x K times K x (b.size / K)
    if node.a_axes is not None:  # set by a first forward
        contracted = node.a_axes[1]
    elif isinstance(node.axes, int):
        contracted = range(a.ndim - node.axes, a.ndim)
    else:
        contracted = node.axes[0]
        if numpy.isscalar(contracted):
            contracted = contracted,
    k = 1
    for axis in contracted:
        k *= a.shape[axis]
    rows, columns = a.size // max(1, k), b.size // max(1, k)
    return 2 * rows * k * columns, rows * columns


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
    in_shape = getattr(forward, _chainer.NODE_IN_SHAPE, None)
    outputs = gy.size * window if in_shape is None else math.prod(in_shape)
    return gy.size * window, outputs


def _layer_normalization(node, in_data):
    x = in_data[0]  # (N, units): two means, x - mu, its square, normalise,
    # scale and shift per element; var + eps, sqrt, 1 / std per row
    return 7 * x.size + 5 * x.shape[0], x.size


def _mean(node, in_data):
    flops, outputs = _reduction(node, in_data)
    return flops + outputs, outputs  # the sum, then a division per output


def _broadcast_grad(per_element):
    def formula(node, in_data):
        # per_element of the broadcast size n, then sum_to each input
        # smaller than n: n additions for it
        x0, x1, gy = in_data
        n = gy.size
        reduced = (n if x0.size < n else 0) + (n if x1.size < n else 0)
        return per_element * n + reduced, x0.size + x1.size
    return formula


def _select_grad(node, in_data):
    gy, = in_data  # gy or 0 into each input, then sum_to the smaller
    shapes = ((node.x1_shape, node.x2_shape) if hasattr(node, 'x1_shape')
              else (node.x1.shape, node.x2.shape))
    sizes = [math.prod(shape) for shape in shapes]
    reduced = sum([gy.size for size in sizes if size < gy.size])
    return 2 * gy.size + reduced, sum(sizes)


def _multi_add(node, in_data):
    outputs = max([x.size for x in in_data])  # k inputs: k - 1 additions
    return (len(in_data) - 1) * outputs, outputs


def _clip(node, in_data):
    x = in_data[0]  # a maximum with x_min and a minimum with x_max (or one)
    bounds = (node.x_min is not None) + (node.x_max is not None)
    return bounds * x.size, x.size


def _where(node, in_data):
    condition = getattr(node.condition, 'shape', ())
    outputs = _broadcast_size([x.shape for x in in_data] + [condition])
    return outputs, outputs  # a select per element


def _mean_squared_error(node, in_data):
    x = in_data[0]  # difference, its dot product with itself, a division
    return 3 * x.size + 1, 1


def _sigmoid_cross_entropy(node, in_data):
    x = in_data[0]
    # -(mask * (x * (t - (x >= 0)) - log1p(exp(-|x|)))): 11 per element
    if node.reduce != 'mean':
        return 11 * x.size, x.size
    # the sum of the losses (and of the mask to normalize), a division
    return (12 + bool(node.normalize)) * x.size + 1, 1


def _sigmoid_cross_entropy_grad(node, in_data):
    x = in_data[0]  # sigmoid (4), y - t, times gy, times the mask (and
    # divided by the count with reduce='mean')
    return (8 if node.reduce == 'mean' else 7) * x.size, x.size


def _sum_to(node, in_data):
    return in_data[0].size, math.prod(getattr(node, _chainer.NODE_SHAPE))


def _broadcast_to(node, in_data):
    # a view: bytes only
    return 0, math.prod(getattr(node, _chainer.NODE_SHAPE))


def _broadcast(node, in_data):
    shape = numpy.broadcast_shapes(*[x.shape for x in in_data])
    return 0, len(in_data) * math.prod(shape)


def _gather_copy(node, in_data):  # concatenations and stacks: bytes only
    return 0, sum([x.size for x in in_data])


def _cast(node, in_data):
    x = in_data[0]  # a copy: its bytes in the new type, counted in the
    # input's float size (as _count writes outputs)
    itemsize = x.itemsize if x.dtype.kind == 'f' else 4
    return 0, -(-x.size * numpy.dtype(node.type).itemsize // itemsize)


def _get_item(node, in_data):
    return 0, _indexed_size(in_data[0].shape, node.slices)  # bytes only


def _indexed_size(shape, slices):
    """The size of ``x[slices]`` for an ``x`` of ``shape``, from shapes."""
    if not math.prod(shape):
        return 0
    basic, advanced = [], []  # advanced: the shapes of the index arrays
    for s in slices:
        if isinstance(s, (bool, numpy.bool_)):  # a new axis of 1 or 0
            basic.append(None)
            advanced.append((int(s),))
        elif s is None or s is Ellipsis or isinstance(
                s, (int, numpy.integer, slice)):
            basic.append(s)
        else:  # an array of indices (or a mask) takes one (its) axes
            if not hasattr(s, 'shape'):
                s = numpy.asarray(s)
            if s.dtype.kind == 'b':
                advanced.append((int(s.sum()),))
                basic.extend([0] * s.ndim)
            else:
                advanced.append(s.shape)
                basic.append(0)
    view = numpy.broadcast_to(numpy.int8(0), shape)[tuple(basic)]
    return view.size * math.prod(numpy.broadcast_shapes(*advanced))


def _get_item_grad(node, in_data):
    gy, = in_data  # a scatter-add of gy into zeros of the input's shape
    return gy.size, math.prod(getattr(node, _chainer.NODE_IN_SHAPE))


def _select_item(node, in_data):
    x, t = in_data  # a gather of one element per row: bytes only
    return 0, t.size


def _assign(node, in_data):
    return 0, math.prod(node.shape)  # gy into zeros: bytes only


_FORMULAS = {
    linear.LinearFunction: _linear,
    linear.LinearGradData: _linear_grad_data,
    linear.LinearGradWeight: _linear_grad_weight,
    convolution_2d.Convolution2DFunction: _convolution_2d,
    convolution_2d.Convolution2DGradW: _convolution_2d_grad_w,
    deconvolution_2d.Deconvolution2DFunction: _deconvolution_2d,
    convolution_nd.ConvolutionND: _convolution_nd,
    convolution_nd.ConvolutionNDGradW: _convolution_nd_grad_w,
    deconvolution_nd.DeconvolutionND: _deconvolution_nd,
    embed_id.EmbedIDFunction: _embed_id,
    embed_id.EmbedIDGrad: _embed_id_grad,
    lstm.LSTM: _lstm,
    lstm.LSTMGrad: _lstm_grad,
    matmul.MatMul: _matmul,
    matmul.BatchMatMul: _batch_matmul,
    matmul.BatchMatMulGrad: _batch_matmul_grad,
    tensordot.TensorDot: _tensordot,
    batch_normalization.BatchNormalization: _batch_normalization(7),
    batch_normalization.BatchNormalizationGrad: _batch_normalization(10),
    batch_normalization.FixedBatchNormalization: _batch_normalization(4),
    batch_normalization.FixedBatchNormalizationGrad: (
        _batch_normalization(6)),
    layer_normalization.LayerNormalization: _layer_normalization,
    softmax_cross_entropy.SoftmaxCrossEntropy: _softmax_cross_entropy,
    softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop: (
        _softmax_cross_entropy_grad),
    sigmoid_cross_entropy.SigmoidCrossEntropy: _sigmoid_cross_entropy,
    sigmoid_cross_entropy.SigmoidCrossEntropyGrad: (
        _sigmoid_cross_entropy_grad),
    mean_squared_error.MeanSquaredError: _mean_squared_error,
    max_pooling_nd.MaxPoolingND: _pooling,
    max_pooling_nd.MaxPoolingNDGrad: _pooling_grad,
    average_pooling_2d.AveragePooling2D: _pooling,
    average_pooling_2d.AveragePooling2DGrad: _pooling_grad,
    average_pooling_nd.AveragePoolingND: _pooling,
    average_pooling_nd.AveragePoolingNDGrad: _pooling_grad,
    sum_module.Sum: _reduction,
    sum_module.SumTo: _sum_to,
    average.Mean: _mean,
    accuracy.Accuracy: _elementwise(1),
    relu.ReLU: _elementwise(1),
    relu.ReLUGrad2: _elementwise(1),
    sigmoid.Sigmoid: _elementwise(4),
    sigmoid.SigmoidGrad: _elementwise(3),
    tanh.Tanh: _elementwise(4),
    tanh.TanhGrad: _elementwise(3),
    leaky_relu.LeakyReLU: _elementwise(2),
    leaky_relu._LeakyReLUGrad: _elementwise(2),  # compare, scale
    elu.ELU: _elementwise(3),  # compare, expm1, scale
    elu.ELUGrad: _elementwise(2),  # y + alpha, select
    softmax.Softmax: _elementwise(3),
    softmax._SoftmaxGrad: _elementwise(4),  # y gy, its sum, y sum, minus
    log_softmax.LogSoftmax: _elementwise(4),
    log_softmax.LogSoftmaxGrad: _elementwise(4),  # sum, exp, product, minus
    # bx, max, abs, negation, exp, log1p, sum, scale
    softplus.Softplus: _elementwise(8),
    softplus.SoftplusGrad: _elementwise(6),  # bx, exp, 1 +, 1 /, 1 -, gy
    dropout.Dropout: _elementwise(1),
    dropout.DropoutGrad: _elementwise(1),
    basic_math.Add: _elementwise(1),
    basic_math.AddConstant: _elementwise(1),
    basic_math.MultiAdd: _multi_add,
    basic_math.Sub: _elementwise(1),
    basic_math.SubFromConstant: _elementwise(1),
    basic_math.Mul: _elementwise(1),
    basic_math.MulConstant: _elementwise(1),
    basic_math.Div: _elementwise(1),
    basic_math.DivGrad: _broadcast_grad(4),  # gy / x1, -gx0 x0 / x1
    basic_math.DivFromConstant: _elementwise(1),
    basic_math.DivFromConstantGrad: _elementwise(3),  # -c gy / x^2
    basic_math.Neg: _elementwise(1),
    basic_math.Absolute: _elementwise(1),
    basic_math.AbsoluteGrad: _elementwise(2),  # sign(x) gy
    basic_math.PowVarVar: _elementwise(1),
    basic_math.PowVarVarGrad: _broadcast_grad(7),  # 4 for gx0, 3 for gx1
    basic_math.PowVarConst: _elementwise(1),
    basic_math.PowVarConstGrad: _elementwise(3),  # c x^(c-1) gy
    basic_math.PowConstVar: _elementwise(1),
    basic_math.PowConstVarGrad: _elementwise(2),  # log(c) y gy
    square.Square: _elementwise(1),
    sqrt.Sqrt: _elementwise(1),
    sqrt.RsqrtGPU: _elementwise(2),  # a square root, a reciprocal
    exponential.Exp: _elementwise(1),
    exponential.Log: _elementwise(1),
    exponential.Log2: _elementwise(1),
    exponential.Log10: _elementwise(1),
    maximum.Maximum: _elementwise(1),
    maximum.MaximumGrad: _select_grad,
    minimum.Minimum: _elementwise(1),
    minimum.MinimumGrad: _select_grad,
    clip.Clip: _clip,
    clip.ClipGrad: _elementwise(1),  # gy times the mask
    where.Where: _where,
    reshape.Reshape: _copy,
    transpose.Transpose: _copy,
    swapaxes.Swapaxes: _copy,
    rollaxis.Rollaxis: _copy,
    expand_dims.ExpandDims: _copy,
    squeeze.Squeeze: _copy,
    permutate.Permutate: _copy,
    split_axis.SplitAxis: _copy,
    separate.Separate: _copy,
    concat.Concat: _gather_copy,
    stack.Stack: _gather_copy,
    hstack.Hstack: _gather_copy,
    vstack.Vstack: _gather_copy,
    dstack.Dstack: _gather_copy,
    transpose_sequence.TransposeSequence: _gather_copy,
    broadcast.BroadcastTo: _broadcast_to,
    broadcast.Broadcast: _broadcast,
    cast.Cast: _cast,
    get_item.GetItem: _get_item,
    get_item.GetItemGrad: _get_item_grad,
    select_item.SelectItem: _select_item,
    select_item.Assign: _assign,
}


#: The classes whose cost is memoized: the cost of such a node depends only
#: on its inputs' shapes and dtypes, and on the node's attributes named
#: here (``tests/costs/test_flops.py`` checks that its formula reads no
#: other).  Others are computed each time (convolutions and pooling, and the
#: nodes whose formula reads arrays or attributes set by their forward:
#: ``GetItem``, ``Where``, ``TensorDot``, ``MaximumGrad``, ``MinimumGrad``).
_KEYED_BY = {cls: () for cls in (
    linear.LinearFunction, linear.LinearGradData, linear.LinearGradWeight,
    embed_id.EmbedIDFunction, lstm.LSTM, lstm.LSTMGrad,
    batch_normalization.BatchNormalization,
    batch_normalization.BatchNormalizationGrad,
    batch_normalization.FixedBatchNormalization,
    batch_normalization.FixedBatchNormalizationGrad,
    layer_normalization.LayerNormalization,
    softmax_cross_entropy.SoftmaxCrossEntropy,
    softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop,
    mean_squared_error.MeanSquaredError,
    accuracy.Accuracy, relu.ReLU, relu.ReLUGrad2, sigmoid.Sigmoid,
    sigmoid.SigmoidGrad, tanh.Tanh, tanh.TanhGrad, leaky_relu.LeakyReLU,
    leaky_relu._LeakyReLUGrad, elu.ELU, elu.ELUGrad, softmax.Softmax,
    softmax._SoftmaxGrad, log_softmax.LogSoftmax, log_softmax.LogSoftmaxGrad,
    softplus.Softplus, softplus.SoftplusGrad,
    dropout.Dropout, dropout.DropoutGrad, basic_math.Add,
    basic_math.AddConstant, basic_math.MultiAdd, basic_math.Sub,
    basic_math.SubFromConstant, basic_math.Mul, basic_math.MulConstant,
    basic_math.Div, basic_math.DivGrad, basic_math.DivFromConstant,
    basic_math.DivFromConstantGrad, basic_math.Neg, basic_math.Absolute,
    basic_math.AbsoluteGrad, basic_math.PowVarVar, basic_math.PowVarVarGrad,
    basic_math.PowVarConst, basic_math.PowVarConstGrad,
    basic_math.PowConstVar, basic_math.PowConstVarGrad, square.Square,
    sqrt.Sqrt, sqrt.RsqrtGPU, exponential.Exp, exponential.Log,
    exponential.Log2, exponential.Log10, maximum.Maximum, minimum.Minimum,
    clip.ClipGrad, reshape.Reshape, transpose.Transpose, swapaxes.Swapaxes,
    rollaxis.Rollaxis, expand_dims.ExpandDims, squeeze.Squeeze,
    permutate.Permutate, split_axis.SplitAxis, separate.Separate,
    concat.Concat, stack.Stack, hstack.Hstack, vstack.Vstack, dstack.Dstack,
    transpose_sequence.TransposeSequence, broadcast.Broadcast,
    select_item.SelectItem)}
_KEYED_BY.update({
    sum_module.Sum: ('axis',),
    average.Mean: ('axis',),
    sum_module.SumTo: (_chainer.NODE_SHAPE,),
    broadcast.BroadcastTo: (_chainer.NODE_SHAPE,),
    matmul.MatMul: ('transa', 'transb'),
    matmul.BatchMatMul: ('transa', 'transb'),
    matmul.BatchMatMulGrad: ('transa', 'transb'),
    embed_id.EmbedIDGrad: ('w_shape',),
    clip.Clip: ('x_min', 'x_max'),
    cast.Cast: ('type',),
    sigmoid_cross_entropy.SigmoidCrossEntropy: ('reduce', 'normalize'),
    sigmoid_cross_entropy.SigmoidCrossEntropyGrad: ('reduce',),
    get_item.GetItemGrad: (_chainer.NODE_IN_SHAPE,),
    select_item.Assign: ('shape',),
})

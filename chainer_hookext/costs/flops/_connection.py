"""Formulas of the layers with weights: linear, convolutions, embeddings,
products, recurrent cells, sampled softmaxes."""

import math

import numpy

from chainer.functions.connection import bilinear
from chainer.functions.connection import convolution_2d
from chainer.functions.connection import convolution_nd
from chainer.functions.connection import deconvolution_2d
from chainer.functions.connection import deconvolution_nd
from chainer.functions.connection import embed_id
from chainer.functions.connection import linear
from chainer.functions.connection import local_convolution_2d
from chainer.functions.loss import negative_sampling
from chainer.functions.math import matmul
from chainer.functions.math import tensordot
from chainer.functions.noise import simplified_dropconnect
from chainer.functions.rnn import lstm
from chainer.functions.rnn import slstm
from chainer.functions.rnn import tree_lstm
from chainer.links.loss import hierarchical_softmax
from chainer.utils import conv

from chainer_hookext.costs.flops import _generic
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import register


@register(linear.LinearFunction, keyed_by=())
def _linear(node, in_data):
    x, W = in_data[:2]
    n, out = x.size // x.shape[-1], W.shape[0]
    flops = 2 * n * x.shape[-1] * out + (n * out if len(in_data) > 2 else 0)
    return Work(flops, n * out)


@register(linear.LinearGradData, keyed_by=())
def _linear_grad_data(node, in_data):
    W, gy = in_data  # gx = gy W
    n = gy.size // gy.shape[-1]
    return Work(2 * n * W.shape[0] * W.shape[1], n * W.shape[1])


@register(linear.LinearGradWeight, keyed_by=())
def _linear_grad_weight(node, in_data):
    x, gy = in_data  # gW = gy^T x
    n = x.size // x.shape[-1]
    return Work(2 * n * x.shape[-1] * gy.shape[-1], x.shape[-1] * gy.shape[-1])


@register(convolution_2d.Convolution2DFunction)
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
    return Work(flops + (outputs if len(in_data) > 2 else 0), outputs)


@register(convolution_2d.Convolution2DGradW)
def _convolution_2d_grad_w(node, in_data):
    x, gy = in_data
    per_output = x.shape[1] // node.groups * node.kh * node.kw
    return Work(2 * gy.size * per_output, math.prod(node.W_shape))


@register(deconvolution_2d.Deconvolution2DFunction)
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
    return Work(flops + (outputs if len(in_data) > 2 else 0), outputs)


@register(convolution_nd.ConvolutionND)
def _convolution_nd(node, in_data):
    x, W = in_data[:2]
    outputs = x.shape[0] * W.shape[0]
    for d, k, s, p, di in zip(x.shape[2:], W.shape[2:], node.stride,
                              node.pad, node.dilate):
        outputs *= conv.get_conv_outsize(d, k, s, p, node.cover_all, di)
    flops = 2 * outputs * math.prod(W.shape[1:])
    return Work(flops + (outputs if len(in_data) > 2 else 0), outputs)


@register(convolution_nd.ConvolutionNDGradW)
def _convolution_nd_grad_w(node, in_data):
    x, gy = in_data  # each of gy's elements times its window of x
    per_output = x.shape[1] // node.groups * math.prod(node.ksize)
    return Work(2 * gy.size * per_output, gy.shape[1] * per_output)


@register(deconvolution_nd.DeconvolutionND)
def _deconvolution_nd(node, in_data):
    x, W = in_data[:2]  # each input element times W[c] (out/g, k...)
    flops = 2 * x.size * math.prod(W.shape[1:])
    outs = node.outs  # set by a first forward
    if outs is None:
        outs = [conv.get_deconv_outsize(d, k, s, p, d=di)
                for d, k, s, p, di in zip(x.shape[2:], W.shape[2:],
                                          node.stride, node.pad, node.dilate)]
    outputs = x.shape[0] * W.shape[1] * node.groups * math.prod(outs)
    return Work(flops + (outputs if len(in_data) > 2 else 0), outputs)


@register(local_convolution_2d.LocalConvolution2DFunction, keyed_by=())
def _local_convolution_2d(node, in_data):
    x, W = in_data[:2]  # W: (out, out_h, out_w, in, kh, kw), one per place
    outputs = x.shape[0] * math.prod(W.shape[:3])
    flops = 2 * x.shape[0] * W.size
    return Work(flops + (outputs if len(in_data) > 2 else 0), outputs)


@register(embed_id.EmbedIDFunction, keyed_by=())
def _embed_id(node, in_data):
    x, W = in_data
    return Work(0, x.size * W.shape[1])  # a gather: bytes only


# A scatter-add of gy into gW.
register(embed_id.EmbedIDGrad, keyed_by=('w_shape',))(
    _generic.shaped('w_shape', scatter=True))


@register(bilinear.BilinearFunction, keyed_by=())
def _bilinear(node, in_data):
    e1, e2, W = in_data[:3]  # the outer product e1 e2^T, times W
    n, j, k, units = e1.shape[0], e1.shape[1], e2.shape[1], W.shape[2]
    flops = n * j * k + 2 * n * j * k * units
    if len(in_data) > 3:  # + e1 V1 + e2 V2 + b
        flops += 2 * n * (j + k) * units + 3 * n * units
    return Work(flops, n * units)


@register(bilinear.BilinearFunctionGrad, keyed_by=())
def _bilinear_grad(node, in_data):
    e1, e2, W = in_data[:3]  # gW, ge1, ge2: three products of W's size
    n, j, k, units = e1.shape[0], e1.shape[1], e2.shape[1], W.shape[2]
    flops = n * j * k + 6 * n * j * k * units
    outputs = e1.size + e2.size + W.size
    if len(in_data) > 4:  # gV1, gV2, gb; ge1 += gy V1^T, ge2 += gy V2^T
        flops += 4 * n * (j + k) * units + n * units
        outputs += in_data[3].size + in_data[4].size + units
    return Work(flops, outputs)


@register(simplified_dropconnect.SimplifiedDropconnect,
          keyed_by=('use_batchwise_mask',))
def _simplified_dropconnect(node, in_data):
    x, W = in_data[:2]  # W scaled and masked (per sample), then x W^T
    n = x.shape[0]
    masks = n if node.use_batchwise_mask else 1
    flops = 2 * masks * W.size + 2 * n * W.size
    outputs = n * W.shape[0]
    return Work(flops + (outputs if len(in_data) > 2 else 0), outputs)


@register(matmul.MatMul, keyed_by=('transa', 'transb'))
def _matmul(node, in_data):
    a, b = in_data  # a vector is a row on the left, a column on the right
    m, k = (1, a.shape[0]) if a.ndim == 1 else a.shape[-2:]
    if node.transa and a.ndim > 1:
        m, k = k, m
    n = 1 if b.ndim == 1 else b.shape[-2] if node.transb else b.shape[-1]
    batch = math.prod(numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    return Work(2 * batch * m * k * n, batch * m * n)


def _batch_matmul_shapes(node, a, b):
    batch = a.shape[0]  # (B, M, ...) as B matrices M x rest
    m, k = a.shape[1], a.size // (batch * a.shape[1])
    if node.transa:
        m, k = k, m
    n = b.shape[1] if node.transb else b.size // (batch * b.shape[1])
    return batch, m, k, n


@register(matmul.BatchMatMul, keyed_by=('transa', 'transb'))
def _batch_matmul(node, in_data):
    batch, m, k, n = _batch_matmul_shapes(node, *in_data)
    return Work(2 * batch * m * k * n, batch * m * n)


@register(matmul.BatchMatMulGrad, keyed_by=('transa', 'transb'))
def _batch_matmul_grad(node, in_data):
    a, b, gy = in_data  # ga = gy b^T and gb = a^T gy: two products
    batch, m, k, n = _batch_matmul_shapes(node, a, b)
    return Work(4 * batch * m * k * n, a.size + b.size)


@register(tensordot.TensorDot)
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
    return Work(2 * rows * k * columns, rows * columns)


# Recurrent cells: an activation (sigmoid, tanh) counts 1 per unit.  LSTM:
# 4 gates, 3 sigmoids, 2 tanh, 3 mul, 1 add per unit; SLSTM: 3 gate sums, 6
# activations, 4 products, 2 sums; its gradient: the 4 + 4 gate inputs' and
# the 2 cells'.
register(lstm.LSTM, keyed_by=())(_generic.copy_with(9, 2))
register(lstm.LSTMGrad, keyed_by=())(_generic.copy_with(14, 5))
register(slstm.SLSTM, keyed_by=())(_generic.copy_with(15, 2))
register(slstm.SLSTMGrad, keyed_by=())(_generic.copy_with(22, 10))


@register(tree_lstm.TreeLSTM, keyed_by=())
def _tree_lstm(node, in_data):
    cs = in_data[:-1]  # the children's cells, then x: gates a, i, o and
    c, children = cs[0].size, len(cs)  # one f per child; activations
    return Work((6 + 3 * children) * c, 2 * c)  # 4 + k, products 2 + k, sums k


@register(negative_sampling.NegativeSamplingFunction,
          keyed_by=('sample_size', 'reduce'))
def _negative_sampling(node, in_data):
    x, t, W = in_data  # per row: 1 + sample_size dot products, each with
    samples = x.shape[0] * (node.sample_size + 1)  # a log-sigmoid (5)
    flops = samples * (2 * x.shape[1] + 5)
    outputs = 1 if node.reduce == 'sum' else x.shape[0]
    return Work(flops + (samples if node.reduce == 'sum' else 0), outputs)


@register(negative_sampling.NegativeSamplingFunctionGrad,
          keyed_by=('sample_size',))
def _negative_sampling_grad(node, in_data):
    x, W, gloss = in_data  # per sample: its dot again, a sigmoid, scale,
    samples = x.shape[0] * (node.sample_size + 1)  # gx += g w, gW += g x
    return Work(samples * (6 * x.shape[1] + 6), x.size + W.size)


@register(hierarchical_softmax.BinaryHierarchicalSoftmaxFunction)
def _hierarchical_softmax(node, in_data):
    x, t, W = in_data  # per sample a path of nodes, each a dot product
    steps = int((node.begins[t + 1] - node.begins[t]).sum())  # and a
    return Work(steps * (2 * x.shape[1] + 6), 1)  # log-sigmoid with its sign

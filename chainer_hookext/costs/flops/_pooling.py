"""Formulas of poolings, unpoolings and resampling."""

import math

from chainer.functions.array import resize_images
from chainer.functions.array import spatial_transformer_grid
from chainer.functions.array import spatial_transformer_sampler
from chainer.functions.pooling import average_pooling_2d
from chainer.functions.pooling import average_pooling_nd
from chainer.functions.pooling import max_pooling_nd
from chainer.functions.pooling import unpooling_2d
from chainer.functions.pooling import unpooling_nd
from chainer.functions.pooling import upsampling_2d
from chainer.utils import conv

from chainer_hookext import _chainer
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import register


def _geometry(node):
    """(ksize, stride, pad) of a 2-D or N-D pooling node."""
    if hasattr(node, 'kh'):
        return (node.kh, node.kw), (node.sy, node.sx), (node.ph, node.pw)
    return node.ksize, node.stride, node.pad


def _pooled_size(node, x):
    ksize, stride, pad = _geometry(node)
    cover_all = getattr(node, 'cover_all', False)
    size = x.shape[0] * x.shape[1]
    for d, k, s, p in zip(x.shape[2:], ksize, stride, pad):
        size *= conv.get_conv_outsize(d, k, s, p, cover_all)
    return size


@register(max_pooling_nd.MaxPoolingND, average_pooling_2d.AveragePooling2D,
          average_pooling_nd.AveragePoolingND)
def _pooling(node, in_data):
    outputs = _pooled_size(node, in_data[0])
    return Work(outputs * math.prod(_geometry(node)[0]), outputs)


@register(max_pooling_nd.MaxPoolingNDGrad,
          average_pooling_2d.AveragePooling2DGrad,
          average_pooling_nd.AveragePoolingNDGrad)
def _pooling_grad(node, in_data):
    gy = in_data[0]  # each output's gradient spread over its window
    forward = getattr(node, 'func', None) or node.apool2d
    window = math.prod(_geometry(forward)[0])
    in_shape = getattr(forward, _chainer.NODE_IN_SHAPE, None)
    outputs = gy.size * window if in_shape is None else math.prod(in_shape)
    return Work(gy.size * window, outputs)


@register(max_pooling_nd.MaxPoolingNDWithIndexes)
def _max_pooling_with_indexes(node, in_data):
    return Work(0, _pooled_size(node.func, in_data[0]))  # a gather: bytes only


def _unpooled_size(node, x):
    ksize, stride, pad = _geometry(node)
    outs = node.outs if hasattr(node, 'outs') else (node.outh, node.outw)
    size = x.shape[0] * x.shape[1]
    for i, (d, k, s, p) in enumerate(zip(x.shape[2:], ksize, stride, pad)):
        size *= outs[i] if outs and outs[i] is not None else (
            conv.get_deconv_outsize(d, k, s, p, node.cover_all))
    return size


@register(unpooling_2d.Unpooling2D, unpooling_nd.UnpoolingND,
          upsampling_2d.Upsampling2D)
def _unpooling(node, in_data):
    return Work(0, _unpooled_size(node, in_data[0]))  # copies or a scatter


@register(unpooling_2d.Unpooling2DGrad, unpooling_nd.UnpoolingNDGrad)
def _unpooling_grad(node, in_data):
    gy = in_data[0]  # the sums of the windows: an addition per element
    return Work(gy.size, _pooled_size(node, gy))


@register(upsampling_2d.Upsampling2DGrad)
def _upsampling_grad(node, in_data):
    return Work(0, _pooled_size(node, in_data[0]))  # a gather: bytes only


# Bilinear resampling: each output a weighted sum of 4 inputs (4
# products, 3 additions), its gradient 4 products scattered (8).
@register(resize_images.ResizeImages, keyed_by=('out_H', 'out_W'))
def _resize_images(node, in_data):
    x = in_data[0]
    outputs = x.shape[0] * x.shape[1] * node.out_H * node.out_W
    return Work(7 * outputs, outputs)


@register(resize_images.ResizeImagesGrad, keyed_by=('input_shape',))
def _resize_images_grad(node, in_data):
    return Work(8 * in_data[0].size, math.prod(node.input_shape))


@register(spatial_transformer_sampler.SpatialTransformerSampler, keyed_by=())
def _spatial_transformer_sampler(node, in_data):
    x, grid = in_data  # (N, C, H, W) sampled at (N, 2, h, w): bilinear,
    outputs = x.shape[0] * x.shape[1] * grid.shape[2] * grid.shape[3]
    return Work(7 * outputs, outputs)  # plus the weights (not counted)


@register(spatial_transformer_grid.SpatialTransformerGrid,
          keyed_by=('output_shape',))
def _spatial_transformer_grid(node, in_data):
    theta, = in_data  # (N, 2, 3) times (3, h w): 3 multiply-adds each
    outputs = theta.shape[0] * 2 * math.prod(node.output_shape)
    return Work(6 * outputs, outputs)

"""Formulas of the array nodes: copies, views, gathers and scatters.  No
FLOPs but a scatter-add's additions; their bytes are what they count."""

import math

import numpy

from chainer.functions.array import as_strided
from chainer.functions.array import broadcast
from chainer.functions.array import cast
from chainer.functions.array import concat
from chainer.functions.array import copy
from chainer.functions.array import depth2space
from chainer.functions.array import diagonal
from chainer.functions.array import dstack
from chainer.functions.array import expand_dims
from chainer.functions.array import flip
from chainer.functions.array import fliplr
from chainer.functions.array import flipud
from chainer.functions.array import get_item
from chainer.functions.array import hstack
from chainer.functions.array import im2col
from chainer.functions.array import moveaxis
from chainer.functions.array import pad
from chainer.functions.array import pad_sequence
from chainer.functions.array import permutate
from chainer.functions.array import repeat
from chainer.functions.array import reshape
from chainer.functions.array import rollaxis
from chainer.functions.array import scatter_add
from chainer.functions.array import select_item
from chainer.functions.array import separate
from chainer.functions.array import space2depth
from chainer.functions.array import split_axis
from chainer.functions.array import squeeze
from chainer.functions.array import stack
from chainer.functions.array import swapaxes
from chainer.functions.array import tile
from chainer.functions.array import transpose
from chainer.functions.array import transpose_sequence
from chainer.functions.array import vstack
from chainer.functions.array import where
from chainer.functions.connection import shift
from chainer.functions.math import identity
from chainer.functions.rnn import n_step_rnn
from chainer.functions.util import forget
from chainer.utils import conv

from chainer_hookext import _chainer
from chainer_hookext.costs.flops import _generic
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import register

register(
    reshape.Reshape, transpose.Transpose, swapaxes.Swapaxes,
    rollaxis.Rollaxis, moveaxis.Moveaxis, expand_dims.ExpandDims,
    squeeze.Squeeze, permutate.Permutate, split_axis.SplitAxis,
    separate.Separate, copy.Copy, flip.Flip, fliplr.FlipLR, flipud.FlipUD,
    depth2space.Depth2Space, space2depth.Space2Depth, shift.Shift,
    keyed_by=())(_generic.copy)
register(
    concat.Concat, stack.Stack, hstack.Hstack, vstack.Vstack, dstack.Dstack,
    transpose_sequence.TransposeSequence, identity.Identity,
    n_step_rnn.CudnnRNNWeightConcat, keyed_by=())(_generic.gather_copy)
# Its forward and its backward apply the nodes it wraps, each counted.
register(forget.Forget)(_generic.nothing)
# Views and gy into zeros: bytes only.
for cls, attribute in (
        (broadcast.BroadcastTo, _chainer.NODE_SHAPE),
        (select_item.Assign, 'shape'), (as_strided.AsStrided, 'shape'),
        (diagonal.DiagonalGrad, 'out_shape')):
    register(cls, keyed_by=(attribute,))(_generic.shaped(attribute))
# Scatter-adds of gy into zeros of the input's shape (col2im, repeats).
for cls, attribute in ((get_item.GetItemGrad, _chainer.NODE_IN_SHAPE),
                       (im2col.Im2ColGrad, 'in_shape'),
                       (repeat.RepeatGrad, 'in_shape')):
    register(cls, keyed_by=(attribute,))(
        _generic.shaped(attribute, scatter=True))


@register(broadcast.Broadcast, keyed_by=())
def _broadcast(node, in_data):
    shape = numpy.broadcast_shapes(*[x.shape for x in in_data])
    return Work(0, len(in_data) * math.prod(shape))


@register(cast.Cast, keyed_by=('type',))
def _cast(node, in_data):
    x = in_data[0]  # the new type's bytes, in the input's float size
    itemsize = x.itemsize if x.dtype.kind == 'f' else 4
    return Work(0, -(-x.size * numpy.dtype(node.type).itemsize // itemsize))


@register(get_item.GetItem)
def _get_item(node, in_data):
    return Work(0, _indexed_size(in_data[0].shape, node.slices))  # bytes only


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


@register(scatter_add.ScatterAdd, keyed_by=())
def _scatter_add(node, in_data):
    a, b = in_data  # b added into a copy of a
    return Work(b.size, a.size)


@register(as_strided.AsStridedGrad)
def _as_strided_grad(node, in_data):
    gy, = in_data  # a scatter-add into the input's geometry
    return Work(gy.size, math.prod(node.input_geometry.shape))


@register(select_item.SelectItem, keyed_by=())
def _select_item(node, in_data):
    x, t = in_data  # a gather of one element per row: bytes only
    return Work(0, t.size)


@register(where.Where)
def _where(node, in_data):
    condition = getattr(node.condition, 'shape', ())
    outputs = _generic.broadcast_size(
        [x.shape for x in in_data] + [condition])
    return Work(outputs, outputs)  # a select per element


@register(diagonal.Diagonal, keyed_by=('offset', 'axis1', 'axis2'))
def _diagonal(node, in_data):
    view = numpy.broadcast_to(numpy.int8(0), in_data[0].shape)
    return Work(0, view.diagonal(node.offset, node.axis1, node.axis2).size)


@register(im2col.Im2Col, keyed_by=(
    'kh', 'kw', 'sy', 'sx', 'ph', 'pw', 'cover_all', 'dy', 'dx'))
def _im2col(node, in_data):
    n, c, h, w = in_data[0].shape
    out_h = conv.get_conv_outsize(h, node.kh, node.sy, node.ph,
                                  node.cover_all, node.dy)
    out_w = conv.get_conv_outsize(w, node.kw, node.sx, node.pw,
                                  node.cover_all, node.dx)
    return Work(0, n * c * node.kh * node.kw * out_h * out_w)


@register(pad.Pad)
def _pad(node, in_data):
    x = in_data[0]  # numpy.pad's widths: ((before, after),) per axis
    widths = numpy.broadcast_to(numpy.asarray(node.pad_width), (x.ndim, 2))
    return Work(0, math.prod([d + int(b) + int(a)
                              for d, (b, a) in zip(x.shape, widths)]))


@register(pad_sequence.PadSequence, keyed_by=('length',))
def _pad_sequence(node, in_data):
    length = node.length or max([len(x) for x in in_data])
    return Work(0, len(in_data) * length * math.prod(in_data[0].shape[1:]))


@register(repeat.Repeat, keyed_by=('repeats', 'axis'))
def _repeat(node, in_data):
    x = in_data[0]
    along = x.size if node.axis is None else x.shape[node.axis]
    repeated = (along * node.repeats[0] if len(node.repeats) == 1
                else sum(node.repeats))
    return Work(0, x.size // max(1, along) * repeated)


@register(tile.Tile, keyed_by=('reps',))
def _tile(node, in_data):
    return Work(0, in_data[0].size * math.prod(node.reps))

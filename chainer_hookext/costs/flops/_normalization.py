"""Formulas of the normalizations."""

from chainer.functions.normalization import batch_normalization
from chainer.functions.normalization import batch_renormalization
from chainer.functions.normalization import group_normalization
from chainer.functions.normalization import l2_normalization
from chainer.functions.normalization import layer_normalization
from chainer.functions.normalization import (
    decorrelated_batch_normalization as _decorrelated)
from chainer.functions.normalization import (
    local_response_normalization as _lrn)

from chainer_hookext.costs.flops import _generic
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import register

for cls, per_element in (
        # Training: mean, variance, normalise, scale and shift.
        (batch_normalization.BatchNormalization, 7),
        (batch_normalization.BatchNormalizationGrad, 10),
        # Evaluation, and its old-style twin with the renormalization's r, d.
        (batch_normalization.FixedBatchNormalization, 4),
        (batch_normalization.FixedBatchNormalizationGrad, 6),
        (batch_renormalization.BatchRenormalizationFunction, 9),
        # Group normalization's backward: x_hat = (x - mean) inv_std; below,
        # x_hat's gradient (gx_hat - its mean - x_hat mean(gx_hat x_hat),
        # times inv_std) and z = y inv_std (its double backward).
        (group_normalization._XHat, 2)):
    register(cls, keyed_by=())(_generic.copy_with(per_element))
register(group_normalization._XHatGrad, keyed_by=())(_generic.elementwise(7))
register(group_normalization._MulInvStd, keyed_by=())(_generic.elementwise(1))
# l2_normalize's backward zeroes the rows whose norm was 0.
register(l2_normalization._SetItemZero, keyed_by=())(_generic.copy)


@register(layer_normalization.LayerNormalization, keyed_by=())
def _layer_normalization(node, in_data):
    x = in_data[0]  # (N, units): two means, x - mu, its square, normalise,
    # scale and shift per element; var + eps, sqrt, 1 / std per row
    return Work(7 * x.size + 5 * x.shape[0], x.size)


@register(group_normalization.GroupNormalization, keyed_by=('groups',))
def _group_normalization(node, in_data):
    x = in_data[0]  # layer normalization's count, per (sample, group)
    return Work(7 * x.size + 5 * x.shape[0] * node.groups, x.size)


@register(group_normalization._ScaleShiftGrad, keyed_by=())
def _scale_shift_grad(node, in_data):
    x_hat, gamma, gy = in_data  # gy gamma; sums of gy x_hat and of gy
    return Work(4 * gy.size, gy.size + 2 * gamma.size)


@register(_lrn.LocalResponseNormalization, keyed_by=('n',))
def _local_response_normalization(node, in_data):
    x = in_data[0]  # x^2, its sum over n channels (n - 1 additions),
    # k + alpha sum (2), its power -beta, times x
    return Work((node.n + 4) * x.size, x.size)


@register(_lrn.LocalResponseNormalizationGrad, keyed_by=('n',))
def _local_response_normalization_grad(node, in_data):
    x, y, gy = in_data  # y gy / unit_scale (2), its sum over n channels,
    # gy scale, 2 alpha beta x, times the sum, minus
    return Work((node.n + 5) * x.size, x.size)


@register(l2_normalization.NormalizeL2, keyed_by=('axis',))
def _normalize_l2(node, in_data):
    x = in_data[0]  # x^2, its sum; sqrt and + eps per row; x / norm
    return Work(3 * x.size + 2 * _generic.reduced_size(x, node.axis), x.size)


def _whitened(node, x):
    return x.shape[1] // node.groups, x.size  # channels per group, n


@register(_decorrelated.DecorrelatedBatchNormalization, keyed_by=('groups',))
def _decorrelated_batch_normalization(node, in_data):
    c, n = _whitened(node, in_data[0])  # mean and centre (2 n), the
    # covariance and two whitening products (6 n c), per group the
    # eigendecomposition (about 9 c^3) and the projection (2 c^3)
    return Work(2 * n + 6 * n * c + 11 * node.groups * c ** 3, n)


@register(_decorrelated.DecorrelatedBatchNormalizationGrad,
          keyed_by=('groups',))
def _decorrelated_batch_normalization_grad(node, in_data):
    c, n = _whitened(node, in_data[0])  # four products of gy's size by c,
    # the symmetric correction per group
    return Work(4 * n + 8 * n * c + 6 * node.groups * c ** 3, n)


@register(_decorrelated.FixedDecorrelatedBatchNormalization,
          keyed_by=('groups',))
def _fixed_decorrelated_batch_normalization(node, in_data):
    c, n = _whitened(node, in_data[0])  # x - mean, the projection
    return Work(n + 2 * n * c, n)


@register(_decorrelated.FixedDecorrelatedBatchNormalizationGrad,
          keyed_by=('groups',))
def _fixed_decorrelated_batch_normalization_grad(node, in_data):
    x, mean, projection, gy = in_data  # gx = gy P, gP = gy^T (x - mean),
    c, n = _whitened(node, x)  # gmean = -sum(gx)
    return Work(5 * n * c + 2 * n, n + mean.size + projection.size)

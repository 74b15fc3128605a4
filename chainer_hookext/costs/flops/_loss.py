"""Formulas of losses and evaluation functions."""

from chainer.functions.evaluation import accuracy
from chainer.functions.evaluation import binary_accuracy
from chainer.functions.evaluation import classification_summary
from chainer.functions.evaluation import r2_score
from chainer.functions.loss import absolute_error
from chainer.functions.loss import contrastive
from chainer.functions.loss import cross_covariance
from chainer.functions.loss import decov
from chainer.functions.loss import hinge
from chainer.functions.loss import huber_loss
from chainer.functions.loss import mean_absolute_error
from chainer.functions.loss import mean_squared_error
from chainer.functions.loss import sigmoid_cross_entropy
from chainer.functions.loss import softmax_cross_entropy
from chainer.functions.loss import squared_error
from chainer.functions.loss import triplet

from chainer_hookext.costs.flops import _generic
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import register

# The argmax of a row (1 per element) equal to the label, the mean.
register(accuracy.Accuracy, keyed_by=())(_generic.elementwise(1))
# x0 - x1, its square or absolute value; y >= 0 (or > 0 for
# probabilities) equal to t, and their mean.
register(squared_error.SquaredError, absolute_error.AbsoluteError,
         binary_accuracy.BinaryAccuracy, keyed_by=())(_generic.elementwise(2))


def _to_one(per_element):
    """``per_element`` FLOPs per element of the first input, a division."""
    def formula(node, in_data):
        return Work(per_element * in_data[0].size + 1, 1)
    formula.__qualname__ = f'_to_one({per_element})'
    return formula


# difference, its dot product with itself (or absolute value, sum), a
# division
register(mean_squared_error.MeanSquaredError,
         mean_absolute_error.MeanAbsoluteError, keyed_by=())(_to_one(3))
# the mean of y, y - it squared and summed, 1 - the residuals' ratio
register(r2_score.R2_score, keyed_by=())(_to_one(7))
# softmax (3 per element), minus one-hot, scale
register(softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop,
         keyed_by=())(_generic.copy_with(5))


@register(softmax_cross_entropy.SoftmaxCrossEntropy, keyed_by=())
def _softmax_cross_entropy(node, in_data):
    x = in_data[0]  # log-softmax (4 per element) and the picked mean
    return Work(4 * x.size + x.shape[0], 1)


@register(sigmoid_cross_entropy.SigmoidCrossEntropy,
          keyed_by=('reduce', 'normalize'))
def _sigmoid_cross_entropy(node, in_data):
    x = in_data[0]
    # -(mask * (x * (t - (x >= 0)) - log1p(exp(-|x|)))): 11 per element
    if node.reduce != 'mean':
        return Work(11 * x.size, x.size)
    # the sum of the losses (and of the mask to normalize), a division
    return Work((12 + bool(node.normalize)) * x.size + 1, 1)


@register(sigmoid_cross_entropy.SigmoidCrossEntropyGrad, keyed_by=('reduce',))
def _sigmoid_cross_entropy_grad(node, in_data):
    x = in_data[0]  # sigmoid (4), y - t, times gy, times the mask (and
    # divided by the count with reduce='mean')
    return Work((8 if node.reduce == 'mean' else 7) * x.size, x.size)


@register(huber_loss.HuberLoss, keyed_by=('reduce',))
def _huber_loss(node, in_data):
    x = in_data[0]  # |x0 - x1| (2), its square, 2 delta |d| - delta^2
    # (2), max, min, halved: 8 per element; summed along axis 1
    if node.reduce == 'sum_along_second_axis':
        return Work(9 * x.size, x.size // x.shape[1])
    return Work(8 * x.size, x.size)


def _reduce(node, per_element, rows, x):
    """``per_element`` FLOPs per element of ``x``, 4 per row (sqrt, margin
    minus it, max with 0, squared), their mean with ``reduce='mean'``."""
    flops = per_element * x.size + 4 * rows
    if node.reduce == 'mean':
        return Work(flops + rows, 1)
    return Work(flops, rows)


@register(contrastive.Contrastive, keyed_by=('reduce',))
def _contrastive(node, in_data):
    x0, x1, y = in_data  # (x0 - x1)^2 summed per row, then the selected
    return _reduce(node, 3, x0.shape[0], x0)  # term per row


@register(triplet.Triplet, keyed_by=('reduce',))
def _triplet(node, in_data):
    anchor = in_data[0]  # two squared distances (6 per element)
    return _reduce(node, 6, anchor.shape[0], anchor)


@register(hinge.Hinge, keyed_by=('norm', 'reduce'))
def _hinge(node, in_data):
    x = in_data[0]  # sign by t, 1 - it, max with 0 (and squared: L2)
    flops = (3 + (node.norm == 'L2')) * x.size
    if node.reduce == 'mean':
        return Work(flops + x.size + 1, 1)
    return Work(flops, x.size)


@register(cross_covariance.CrossCovariance, keyed_by=('reduce',))
def _cross_covariance(node, in_data):
    y, z = in_data  # centre both (2 per element), y^T z, / N
    n, dy, dz = y.shape[0], y.shape[1], z.shape[1]
    flops = 2 * (y.size + z.size) + 2 * n * dy * dz + dy * dz
    if node.reduce == 'half_squared_sum':
        return Work(flops + 2 * dy * dz + 1, 1)  # its dot with itself, halved
    return Work(flops, dy * dz)


@register(decov.DeCov, keyed_by=('reduce',))
def _decov(node, in_data):
    h, = in_data  # centre, h^T h, / N
    n, d = h.shape
    flops = 2 * h.size + 2 * n * d * d + d * d
    if node.reduce == 'half_squared_sum':
        return Work(flops + 2 * d * d + 1, 1)
    return Work(flops, d * d)


@register(classification_summary.ClassificationSummary)
def _classification_summary(node, in_data):
    y, t = in_data  # argmax, 2 selects, 3 counts per sample; per label
    # precision, recall, F and support
    labels = node.label_num or y.shape[1]
    return Work(y.size + 5 * t.size + 8 * labels, 4 * labels)

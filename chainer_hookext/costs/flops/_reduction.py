"""Formulas of reductions and scans: sums, means, maxima, products."""

import math

from chainer.functions.math import average
from chainer.functions.math import batch_l2_norm_squared
from chainer.functions.math import cumprod
from chainer.functions.math import cumsum
from chainer.functions.math import fft
from chainer.functions.math import logsumexp
from chainer.functions.math import minmax
from chainer.functions.math import prod
from chainer.functions.math import sum as sum_module

from chainer_hookext import _chainer
from chainer_hookext.costs.flops import _generic
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import register

# One comparison or operation per element.
register(sum_module.Sum, minmax.Max, minmax.Min, minmax.ArgMax,
         minmax.ArgMin, prod.Prod, keyed_by=('axis',))(_generic.reduction)
register(cumsum.Cumsum, cumprod.Cumprod, keyed_by=())(_generic.copy_with(1))
# Cumprodsum: z[i] = z[i-1] xmul[i] + xadd[i]; BatchL2NormSquaredGrad: 2 x gy.
register(cumprod.Cumprodsum, batch_l2_norm_squared.BatchL2NormSquaredGrad,
         keyed_by=())(_generic.copy_with(2))
register(sum_module.SumTo, keyed_by=(_chainer.NODE_SHAPE,))(
    _generic.shaped(_chainer.NODE_SHAPE, scatter=True))


@register(average.Mean, keyed_by=('axis',))
def _mean(node, in_data):
    flops, outputs = _generic.reduction(node, in_data)
    # The sum, then a division per output.
    return Work(flops + outputs, outputs)


@register(logsumexp.LogSumExp, keyed_by=('axis',))
def _logsumexp(node, in_data):
    x = in_data[0]  # the max, x - max, exp, their sum; a log and + max
    outputs = _generic.reduced_size(x, node.axis)
    return Work(4 * x.size + 2 * outputs, outputs)


@register(batch_l2_norm_squared.BatchL2NormSquared, keyed_by=())
def _batch_l2_norm_squared(node, in_data):
    x = in_data[0]  # a square and a sum per element
    return Work(2 * x.size, x.shape[0])


@register(fft.FFT, keyed_by=())
def _fft(node, in_data):
    real, imag = in_data  # the usual 5 n log2(n) of a complex transform
    n = real.shape[-1]  # of length n, for each of the size / n rows
    return Work(int(5 * real.size * math.log2(max(n, 1))), 2 * real.size)

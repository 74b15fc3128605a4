"""Formulas of elementwise nodes: activations, arithmetic, mathematical
functions, noise.  A transcendental or special function (``exp``,
``erf``, ``lgamma``...) counts 1 per element, as an addition does."""

import math

from chainer.functions.activation import clipped_relu
from chainer.functions.activation import crelu
from chainer.functions.activation import elu
from chainer.functions.activation import hard_sigmoid
from chainer.functions.activation import leaky_relu
from chainer.functions.activation import log_softmax
from chainer.functions.activation import prelu
from chainer.functions.activation import relu
from chainer.functions.activation import rrelu
from chainer.functions.activation import sigmoid
from chainer.functions.activation import softmax
from chainer.functions.activation import softplus
from chainer.functions.activation import swish
from chainer.functions.activation import tanh
from chainer.functions.math import arctanh
from chainer.functions.math import basic_math
from chainer.functions.math import clip
from chainer.functions.math import digamma
from chainer.functions.math import erf
from chainer.functions.math import erfc
from chainer.functions.math import erfcinv
from chainer.functions.math import erfcx
from chainer.functions.math import erfinv
from chainer.functions.math import exponential
from chainer.functions.math import exponential_m1
from chainer.functions.math import fmod
from chainer.functions.math import hyperbolic
from chainer.functions.math import lgamma
from chainer.functions.math import linear_interpolate
from chainer.functions.math import log_ndtr
from chainer.functions.math import logarithm_1p
from chainer.functions.math import maximum
from chainer.functions.math import minimum
from chainer.functions.math import ndtr
from chainer.functions.math import ndtri
from chainer.functions.math import polygamma
from chainer.functions.math import sqrt
from chainer.functions.math import square
from chainer.functions.math import trigonometric
from chainer.functions.math import zeta
from chainer.functions.noise import dropout
from chainer.functions.noise import gaussian
from chainer.functions.noise import zoneout

from chainer_hookext.costs.flops import _generic
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import register

register(
    relu.ReLU, relu.ReLUGrad2, relu.ReLUGradCudnn, dropout.Dropout,
    dropout.DropoutGrad, dropout.DropoutGradCuDNN, basic_math.Add,
    basic_math.AddConstant, basic_math.Sub, basic_math.SubFromConstant,
    basic_math.Mul, basic_math.MulConstant, basic_math.Div,
    basic_math.DivFromConstant, basic_math.Neg, basic_math.Absolute,
    basic_math.PowVarVar, basic_math.PowVarConst, basic_math.PowConstVar,
    square.Square, sqrt.Sqrt, exponential.Exp, exponential.Log,
    exponential.Log2, exponential.Log10, exponential_m1.Expm1,
    logarithm_1p.Log1p, maximum.Maximum, minimum.Minimum,
    clip.ClipGrad,  # gy times the mask
    trigonometric.Sin, trigonometric.Cos, trigonometric.Tan,
    trigonometric.Arcsin, trigonometric.Arccos, trigonometric.Arctan,
    trigonometric.Arctan2, hyperbolic.Sinh, hyperbolic.Cosh,
    arctanh.Arctanh, erf.Erf, erfc.Erfc, erfcinv.ErfcInv, erfcx.Erfcx,
    erfinv.ErfInv, digamma.DiGamma, lgamma.LGamma, polygamma.PolyGamma,
    zeta.Zeta, ndtr.Ndtr, ndtri.Ndtri, log_ndtr.LogNdtr, fmod.Fmod,
    keyed_by=())(_generic.elementwise(1))

register(
    leaky_relu.LeakyReLU,
    leaky_relu._LeakyReLUGrad,  # compare, scale
    elu.ELUGrad,  # y + alpha, select
    basic_math.AbsoluteGrad,  # sign(x) gy
    basic_math.PowConstVarGrad,  # log(c) y gy
    sqrt.RsqrtGPU,  # a square root, a reciprocal
    clipped_relu.ClippedReLU,  # max with 0, min with z
    clipped_relu.ClippedReLUGrad2,  # the mask (0 < x < z), times gy
    clipped_relu.ClippedReLUGrad3,
    hard_sigmoid.HardSigmoidGrad,  # the mask, times gy
    prelu.PReLUFunction,  # compare, times W
    rrelu.RReLU,  # compare, times r
    rrelu._RReLUGrad,  # compare, times r
    trigonometric.SinGrad,  # cos(x) gy
    trigonometric.CosGrad,  # -sin(x) gy
    keyed_by=())(_generic.elementwise(2))
register(
    softmax.Softmax,
    elu.ELU,  # compare, expm1, scale
    sigmoid.SigmoidGrad, tanh.TanhGrad,
    basic_math.DivFromConstantGrad,  # -c gy / x^2
    basic_math.PowVarConstGrad,  # c x^(c-1) gy
    trigonometric.ArctanGrad,  # gy / (1 + x^2)
    zoneout.Zoneout,  # h flag_h + x flag_x
    linear_interpolate.LinearInterpolate,  # p (x - y) + y
    keyed_by=())(_generic.elementwise(3))
register(
    log_softmax.LogSoftmax, sigmoid.Sigmoid, tanh.Tanh,
    softmax._SoftmaxGrad,  # y gy, its sum, y sum, minus
    log_softmax.LogSoftmaxGrad,  # sum of gy, exp(y), product, minus
    hard_sigmoid.HardSigmoid,  # 0.2 x + 0.5, clipped to [0, 1]
    trigonometric.ArcsinGrad,  # gy / sqrt(1 - x^2)
    gaussian.Gaussian,  # mean + exp(ln_var / 2) eps
    keyed_by=())(_generic.elementwise(4))
register(
    trigonometric.ArccosGrad,  # -gy / sqrt(1 - x^2)
    keyed_by=())(_generic.elementwise(5))
register(
    softplus.SoftplusGrad,  # bx, exp, 1 +, reciprocal, 1 -, times gy
    swish.Swish,  # bx, sigmoid (4), times x
    keyed_by=())(_generic.elementwise(6))
# bx, max, abs, negation, exp, log1p, sum, scale
register(softplus.Softplus, keyed_by=())(_generic.elementwise(8))
# gy / x1, -gx0 x0 / x1
register(basic_math.DivGrad, keyed_by=())(_generic.broadcast_grad(4))
# 4 for gx0, 3 for gx1
register(basic_math.PowVarVarGrad, keyed_by=())(_generic.broadcast_grad(7))
# x1^2 + x2^2, gy / it, times x2, times -x1
register(trigonometric.Arctan2Grad, keyed_by=())(_generic.broadcast_grad(6))
# gp = gz (x - y), gx = gz p, gy = gz - gx
register(linear_interpolate.LinearInterpolateGrad,
         keyed_by=())(_generic.elementwise(4, outputs=3))
# max(x, 0) and max(-x, 0), concatenated
register(crelu.CReLU, keyed_by=())(_generic.copy_with(3, 2))


@register(basic_math.MultiAdd, keyed_by=())
def _multi_add(node, in_data):
    outputs = max([x.size for x in in_data])  # k inputs: k - 1 additions
    return Work((len(in_data) - 1) * outputs, outputs)


@register(clip.Clip, keyed_by=('x_min', 'x_max'))
def _clip(node, in_data):
    x = in_data[0]  # a maximum with x_min and a minimum with x_max (or one)
    bounds = (node.x_min is not None) + (node.x_max is not None)
    return Work(bounds * x.size, x.size)


@register(prelu.PReLUFunctionGrad, keyed_by=())
def _prelu_grad(node, in_data):
    x, W, gy = in_data  # gx: select, times W; gW: mask, gy x, its sum
    return Work(5 * x.size, x.size + W.size)


@register(swish.SwishGrad, keyed_by=())
def _swish_grad(node, in_data):
    x, beta, gy = in_data  # sigmoid(bx) 5, y 1, gx 6, gbeta 4 (with
    return Work(16 * x.size, x.size + beta.size)  # its sum)


def _select_grad(node, in_data):
    gy, = in_data  # gy or 0 into each input, then sum_to the smaller
    shapes = ((node.x1_shape, node.x2_shape) if hasattr(node, 'x1_shape')
              else (node.x1.shape, node.x2.shape))
    sizes = [math.prod(shape) for shape in shapes]
    reduced = sum([gy.size for size in sizes if size < gy.size])
    return Work(2 * gy.size + reduced, sum(sizes))


register(maximum.MaximumGrad, minimum.MinimumGrad)(_select_grad)

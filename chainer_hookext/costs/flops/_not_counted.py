"""Chainer's node classes left without a formula, and why (docs/flops.md,
"Not yet covered"): their nodes count as unknown."""

from chainer.functions.loss import ctc
from chainer.functions.math import cholesky
from chainer.functions.math import det
from chainer.functions.math import einsum
from chainer.functions.math import inv
from chainer.functions.math import minmax
from chainer.functions.math import sparse_matmul
from chainer.functions.pooling import pooling_2d
from chainer.functions.pooling import pooling_nd
from chainer.functions.pooling import roi_average_align_2d
from chainer.functions.pooling import roi_average_pooling_2d
from chainer.functions.pooling import roi_max_align_2d
from chainer.functions.pooling import roi_max_pooling_2d
from chainer.functions.pooling import roi_pooling_2d
from chainer.functions.rnn import n_step_gru
from chainer.functions.rnn import n_step_lstm
from chainer.functions.rnn import n_step_rnn
from chainer.functions.theano import theano_function

from chainer_hookext.costs.flops._registry import not_counted

not_counted(
    'a base class, never applied itself', minmax.SelectorBase,
    minmax.IndexSelectorBase, pooling_2d.Pooling2D, pooling_nd._PoolingND,
    n_step_rnn.BaseNStepRNN)
not_counted(
    "cuDNN's fused RNN, applied on a GPU only (on a CPU the n-step links "
    'apply counted nodes); its work is in cuDNN, its backward in one '
    'old-style Function that applies no node', n_step_lstm.NStepLSTM,
    n_step_lstm.NStepBiLSTM, n_step_gru.NStepGRU, n_step_gru.NStepBiGRU,
    n_step_rnn.NStepRNNTanh, n_step_rnn.NStepBiRNNTanh,
    n_step_rnn.NStepRNNReLU, n_step_rnn.NStepBiRNNReLU)
not_counted(
    "LAPACK's or cuSOLVER's decomposition: its FLOPs depend on the "
    'algorithm (of the order of n^3 per matrix)', cholesky.Cholesky,
    det.BatchDet, inv.Inv, inv.BatchInv)
not_counted(
    'the FLOPs depend on the contraction order NumPy or CuPy picks',
    einsum.EinSum, einsum.DiagEinSum)
not_counted(
    'sparse: its FLOPs depend on the transposes and on the nonzeros of '
    'each row (no link or example applies it)', sparse_matmul.CooMatMul,
    sparse_matmul.CooMatMulGradSP)
not_counted(
    "the bins' sizes, so the FLOPs, depend on the values of the regions "
    '(no link or example applies it)', roi_pooling_2d.ROIPooling2D,
    roi_pooling_2d.ROIPooling2DGrad, roi_max_pooling_2d.ROIMaxPooling2D,
    roi_average_pooling_2d.ROIAveragePooling2D,
    roi_max_align_2d.ROIMaxAlign2D,
    roi_average_align_2d.ROIAverageAlign2D)
not_counted(
    'a dynamic programme over the labels, forward and backward in one '
    'old-style Function (no link or example applies it)',
    ctc.ConnectionistTemporalClassification)
not_counted('a Theano graph: its work is not known to Chainer',
            theano_function.TheanoFunction)

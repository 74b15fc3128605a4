"""The machine's own peaks: FLOP/s of a matrix product, bytes/s of a copy.

A roofline needs two ceilings.  :func:`measure` takes them on the device
and in the dtype of the model, once per process (cached): a square GEMM
(2·n³ FLOPs) and a streaming copy (read and write: 2 × its bytes), each the
best of a few repeats, well under half a second in all.  On a GPU, CuPy's
device is synchronised inside this measurement only.
"""

import collections

import numpy

from chainer_hookext.timing import clock


#: Ceilings of a roofline: FLOP/s and bytes/s.
Peaks = collections.namedtuple('Peaks', ('flops', 'bandwidth'))

_measured = {}  # {(device key, dtype): Peaks}
_GEMM = 512
_COPY_BYTES = 1 << 25
_REPEATS = 3


def measure(xp=numpy, dtype=numpy.float32):
    """Returns the :class:`Peaks` of ``xp``'s current device in ``dtype``.

    Args:
        xp: ``numpy``, or ``cupy`` for the current CUDA device.
        dtype: The model's floating dtype.
    """
    dtype = numpy.dtype(dtype)
    key = (_device_key(xp), dtype.str)
    peaks = _measured.get(key)
    if peaks is None:
        peaks = _measured[key] = _measure(xp, dtype)
    return peaks


def _device_key(xp):
    if xp is numpy:
        return 'cpu'
    return 'cuda:{}'.format(xp.cuda.Device().id)


def _measure(xp, dtype):
    a = xp.ones((_GEMM, _GEMM), dtype)
    b = xp.ones((_GEMM, _GEMM), dtype)
    gemm = _best(xp, lambda: xp.matmul(a, b))
    src = xp.ones(_COPY_BYTES // dtype.itemsize, dtype)
    dst = xp.empty_like(src)
    copy = _best(xp, lambda: xp.copyto(dst, src))
    return Peaks(2.0 * _GEMM ** 3 / gemm, 2.0 * _COPY_BYTES / copy)


def _best(xp, work):
    work()  # warm-up: allocations, kernels compiled
    best = float('inf')
    for _ in range(_REPEATS):
        _synchronize(xp)
        start = clock.now()
        work()
        _synchronize(xp)
        best = min(best, clock.now() - start)
    return max(best, 1e-9)


def _synchronize(xp):
    if xp is not numpy:
        xp.cuda.Device().synchronize()

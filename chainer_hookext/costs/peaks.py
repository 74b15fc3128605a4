"""The machine's own peaks: FLOP/s of a matrix product, bytes/s of a copy.

A roofline needs two ceilings.  :func:`measure` takes them on the device
and in the dtype of the model, once per process (cached): a square GEMM
(2·n³ FLOPs) and a streaming copy (read and write: 2 × its bytes), each the
best of a few repeats, well under half a second in all.  On a GPU, CuPy's
device is synchronised inside this measurement only, and the sizes are
larger (a 512 GEMM takes tens of microseconds there, mostly its launch: an
H200 measured 7.5 TFLOP/s in float32 with it); the arrays' blocks are
freed from CuPy's pool afterwards.
"""

import collections

import chainer
import numpy

from chainer_hookext.timing import clock


#: Ceilings of a roofline: FLOP/s and bytes/s.
Peaks = collections.namedtuple('Peaks', ('flops', 'bandwidth'))

_measured = {}  # {(device key, dtype): Peaks}
#: GEMM sizes and copy bytes, on the CPU and on a GPU.
_GEMM = {'cpu': 512, 'gpu': 4096}
_COPY_BYTES = {'cpu': 1 << 25, 'gpu': 1 << 28}
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


def measure_for(param):
    """Returns the :class:`Peaks` of ``param``'s device and dtype.

    Args:
        param (~chainer.Parameter): An initialised parameter of the model,
            or ``None``: float32 on the CPU.
    """
    if param is None:
        return measure()
    device = chainer.backend.get_device_from_array(param.array)
    xp = device.xp if device.xp is not chainer.backend.chainerx else numpy
    with chainer.using_device(device):
        return measure(xp, param.dtype)


def _device_key(xp):
    if xp is numpy:
        return 'cpu'
    return 'cuda:{}'.format(xp.cuda.Device().id)


def _measure(xp, dtype):
    kind = 'cpu' if xp is numpy else 'gpu'
    n, nbytes = _GEMM[kind], _COPY_BYTES[kind]
    a = xp.ones((n, n), dtype)
    b = xp.ones((n, n), dtype)
    gemm = _best(xp, lambda: xp.matmul(a, b))
    src = xp.ones(nbytes // dtype.itemsize, dtype)
    dst = xp.empty_like(src)
    copy = _best(xp, lambda: xp.copyto(dst, src))
    if xp is not numpy:
        del a, b, src, dst
        xp.get_default_memory_pool().free_all_blocks()
    return Peaks(2.0 * n ** 3 / gemm, 2.0 * nbytes / copy)


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

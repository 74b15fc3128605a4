"""The machine's peaks: FLOP/s of a square GEMM (2·n³ FLOPs), bytes/s of a
copy, kept per machine, device and dtype (docs/flops.md, "Peaks")."""

import collections
import datetime
import json
import os
import platform
import time
import typing
import warnings

import chainer
import numpy

from chainer_hookext import _files
from chainer_hookext.timing import clock


#: Ceilings of a roofline: FLOP/s and bytes/s.
Peaks = collections.namedtuple('Peaks', ('flops', 'bandwidth'))

#: The environment variable naming the cache file.
ENVIRONMENT = 'CHAINER_HOOKEXT_PEAKS'
#: Seconds each measurement repeats its work for, at least.
SECONDS = 0.5
_GEMM = {'cpu': 512, 'gpu': 4096}
_COPY_BYTES = {'cpu': 1 << 25, 'gpu': 1 << 28}
_LEAST_REPEATS = 5

_measured = {}  # {(cache file, key): Peaks}


def cache_path() -> str:
    """Returns the path of the file keeping the peaks measured."""
    root = os.environ.get('XDG_CACHE_HOME') or os.path.join(
        os.path.expanduser('~'), '.cache')
    return os.environ.get(ENVIRONMENT) or os.path.join(
        root, 'chainer_hookext', 'peaks.json')


def measure(xp=numpy, dtype=numpy.float32, again: bool = False) -> Peaks:
    """The :class:`Peaks` of ``xp``'s current device in ``dtype``, from
    :func:`cache_path`, else (or ``again``) measured and kept there."""
    dtype = numpy.dtype(dtype)
    path, key = cache_path(), _cache_key(xp, dtype)
    peaks = None if again else _measured.get((path, key))
    if peaks is None:
        cached = {} if again else _read(path)
        peaks = _peaks_of(cached.get(key))
        if peaks is None:
            start = time.perf_counter()
            peaks = _measure(xp, dtype)
            _write(path, key, peaks, time.perf_counter() - start)
        _measured[path, key] = peaks
    return peaks


def measure_for(param) -> Peaks:
    """:func:`measure` for ``param``'s device and dtype (``None``: CPU)."""
    if param is None:
        return measure()
    device = chainer.backend.get_device_from_array(param.array)
    xp = device.xp if device.xp is not chainer.backend.chainerx else numpy
    with chainer.using_device(device):
        return measure(xp, param.dtype)


def _cache_key(xp, dtype):
    # '<host> cpu float32', '<host> cuda:0 NVIDIA H100 80GB HBM3 float16'.
    if xp is numpy:
        device = 'cpu'
    else:
        device_id = xp.cuda.Device().id
        name = xp.cuda.runtime.getDeviceProperties(device_id)['name']
        if isinstance(name, bytes):
            name = name.decode()
        device = f'cuda:{device_id} {name}'
    return f'{platform.node()} {device} {dtype.name}'


def _peaks_of(entry):
    try:
        peaks = Peaks(float(entry['flops']), float(entry['bandwidth']))
    except (KeyError, TypeError, ValueError):
        return None
    return peaks if min(peaks) > 0 and max(peaks) < float('inf') else None


def _read(path):
    # {} without a file, and (warned) with a broken one.
    try:
        with open(path, encoding='utf-8') as f:
            found = json.load(f)['peaks']
        if not isinstance(found, dict):
            raise TypeError(f'"peaks" is {found!r}')
        return found
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, ValueError, KeyError, TypeError) as e:
        warnings.warn(
            f'TimedLinks: the peaks file {path!r} cannot be read ({e}); the '
            f'peaks are measured again and written over it.',
            RuntimeWarning)
        return {}


def _write(path, key, peaks, seconds):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        found = _read(path)
    found[key] = dict(peaks._asdict(), seconds=round(seconds, 3),
                      measured=datetime.datetime.now().isoformat(
                          timespec='seconds'))
    data = json.dumps({'peaks': found}, indent=1, sort_keys=True)
    try:
        _files.write_atomic(path, data.encode('utf-8'))
    except OSError as e:
        warnings.warn(
            f'TimedLinks: the peaks measured cannot be kept in {path!r} '
            f'({e}); each run measures them again.  Set ${ENVIRONMENT} to a '
            f'file that can be written.', RuntimeWarning)


def _measure(xp, dtype):
    kind = 'cpu' if xp is numpy else 'gpu'
    n, nbytes = _GEMM[kind], _COPY_BYTES[kind]
    a, b = xp.ones((n, n), dtype), xp.ones((n, n), dtype)
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
    sync = (lambda: None) if xp is numpy else xp.cuda.Device().synchronize
    best, repeats = float('inf'), 0
    # The budget is wall time, whatever clock a test gives the package.
    until = time.perf_counter() + SECONDS
    while repeats < _LEAST_REPEATS or time.perf_counter() < until:
        sync()
        start = clock.now()
        work()
        sync()
        best = min(best, clock.now() - start)
        repeats += 1
    return max(best, 1e-9)


def measure_again(device: typing.Optional[int] = None,
                  dtype: str = 'float32') -> str:
    """Measures and keeps the peaks of a CUDA ``device`` (``None``: the CPU)
    again, and says what they are (``python -m chainer_hookext peaks``)."""
    if device is None:
        where, peaks = 'the CPU', measure(numpy, dtype, again=True)
    else:
        from chainer.backends import cuda
        with cuda.get_device_from_id(device):
            peaks = measure(cuda.cupy, dtype, again=True)
        where = f'CUDA device {device}'
    return (f'{where}, {dtype}: {peaks.flops / 1e9:.4g} GFLOP/s, '
            f'{peaks.bandwidth / 1e9:.4g} GB/s, kept in {cache_path()}')

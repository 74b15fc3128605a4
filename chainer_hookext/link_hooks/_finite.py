"""Device-side finiteness flags: :func:`code` is 0 when all is finite, 1 NaN,
2 Inf, 3 both (a CuPy 0-dim array, read later without a sync).
"""

import collections

import chainer
import numpy
from chainer import backend

from chainer_hookext import _arrays


KINDS = {1: 'NaN', 2: 'Inf', 3: 'NaN and Inf'}
_cupy_kernel = None


def code(array):
    """Returns the finiteness code of ``array``."""
    xp = backend.get_array_module(array)
    if xp is numpy:
        if numpy.isfinite(array).all():
            return 0
    elif xp is chainer.backends.cuda.cupy:
        return _cupy_code(array)
    return int(bool(xp.isnan(array).any())) | (
        2 * int(bool(xp.isinf(array).any())))


def _cupy_code(array):
    global _cupy_kernel
    if _cupy_kernel is None:
        _cupy_kernel = chainer.backends.cuda.cupy.ReductionKernel(
            'T x', 'int32 y', 'isnan(x) ? 1 : (isinf(x) ? 2 : 0)', 'a | b',
            'y = a', '0', 'chainer_hookext_non_finite')
    return _cupy_kernel(array)


def forward_cause(args):
    """The :class:`Cause` of a non-finite output (syncs per device array)."""
    for prefix, value in (('args', args.args), ('kwargs', args.kwargs)):
        for keys, array in _arrays.walk(value):
            if _non_finite(array):
                where = ''.join(f'[{k!r}]' for k in keys)
                return Cause(
                    f'its input {prefix}{where} was already non-finite: look '
                    'before this link', None)
    for path, param in args.link.namedparams(include_uninit=False):
        if _non_finite(param.array):
            path = path[1:]
            return Cause(
                f'its parameter {path} is non-finite: look at what last '
                'wrote it (an update, a loaded snapshot)', path)
    return Cause('its inputs and parameters are finite: it arises in this '
                 'link\'s forward', None)


#: ``hint``, a sentence; ``param``, the first non-finite parameter's path
#: below the link (``'l1/W'``) or ``None``.
Cause = collections.namedtuple('Cause', 'hint param')


def _non_finite(array):
    return bool(array.dtype.kind == 'f' and array.size and int(code(array)))

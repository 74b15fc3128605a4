"""Arrays inside a value, and copying device arrays to the host at once.

:func:`walk` finds the arrays in a link's output or arguments (a
:class:`~chainer.Variable`, an array, or tuples, lists and dicts of them);
:func:`to_host` brings values computed on a device back to NumPy with one
synchronisation per device.  Used by the hooks that look at outputs and by
the finiteness checks.
"""

import chainer
import numpy
from chainer import backend


def walk(out, keys=(), variables=False):
    """Yields ``(keys, array)`` for each array in a link's output.

    ``out`` may be a :class:`~chainer.Variable`, an array, or tuples, lists
    and dicts of them; ``keys`` is the path of indices and dict keys to the
    array, ``()`` for a single output.  Anything else is skipped.  With
    ``variables=True`` a :class:`~chainer.Variable` is yielded as it is,
    not its array.
    """
    if isinstance(out, chainer.Variable):
        yield keys, out if variables else out.array
    elif isinstance(out, chainer.get_array_types()):
        yield keys, out
    elif isinstance(out, (tuple, list)):
        for i, item in enumerate(out):
            yield from walk(item, keys + (i,), variables)
    elif isinstance(out, dict):
        for key, item in out.items():
            yield from walk(item, keys + (key,), variables)


def to_host(values):
    """Returns ``values`` with device arrays copied to NumPy.

    Device arrays of one device must share a shape: they are stacked and
    copied at once (one synchronisation per device).  Other values are
    returned as they are.
    """
    out = list(values)
    groups = {}
    for i, value in enumerate(out):
        if (isinstance(value, chainer.get_array_types())
                and not isinstance(value, numpy.ndarray)):
            groups.setdefault(
                backend.get_device_from_array(value), []).append(i)
    for device, indexes in groups.items():
        with chainer.using_device(device):
            stacked = device.xp.stack([out[i] for i in indexes])
        for i, value in zip(indexes, backend.CpuDevice().send(stacked)):
            out[i] = value
    return out

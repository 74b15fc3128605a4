"""The arrays inside a link's output or arguments (:func:`walk`), and device
arrays copied to NumPy with one synchronisation per device (:func:`to_host`).
"""

import chainer
import numpy
from chainer import backend


def walk(out, keys=(), variables=False):
    """Yields ``(keys, array)`` for each array in ``out``.

    ``out`` is a Variable, an array, or tuples, lists and dicts of them
    (anything else is skipped); ``keys`` the indices and dict keys down to
    the array.  With ``variables``, a Variable is yielded as it is.
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
    copied at once.  Other values are returned as they are.
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

"""The arrays inside a link's output or arguments (:func:`walk`), and device
arrays copied to NumPy with one synchronisation per device (:func:`to_host`).
"""

import chainer
import numpy
from chainer import backend


def walk(out, keys=(), variables=False):
    """Yields ``(keys, array)`` for each array (or, with ``variables``,
    Variable) in tuples, lists and dicts ``out``; ``keys``: the path."""
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
    """``values`` with device arrays (of one shape per device: stacked and
    copied at once) copied to NumPy."""
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

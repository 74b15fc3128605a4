"""The memory buffers behind arrays, and those a function node keeps
(docs/memory.md, "What counts").
"""

import collections
import gc

import chainer
import numpy

from chainer import function
from chainer.backends import cuda

from chainer_hookext import _chainer


#: One buffer: ``key``, the id of the owning object, and its size.
Buffer = collections.namedtuple('Buffer', ('key', 'nbytes'))


def buffer_of(array):
    """Returns the :class:`Buffer` behind a NumPy or CuPy array, or ``None``.

    >>> a = numpy.zeros(10, numpy.float32)
    >>> buffer_of(a[2:5]) == buffer_of(a) == Buffer(id(a), 40)
    True
    """
    found = owner_of(array)
    return None if found is None else Buffer(id(found[0]), found[1])


def owner_of(array):
    """Returns ``(owner, nbytes)`` of the buffer behind ``array``, or
    ``None``; ``id(owner)`` is :class:`Buffer`'s ``key``."""
    if isinstance(array, numpy.ndarray):
        root = array
        base = root.base
        while isinstance(base, numpy.ndarray):
            root = base
            base = root.base
        if base is not None:  # a buffer NumPy does not own: the view's
            return root, array.nbytes
        return root, root.nbytes
    if cuda.available and isinstance(array, cuda.ndarray):
        memory = array.data.mem
        return memory, memory.size
    return None


def kept_arrays(node):
    """Returns the arrays a node keeps for backward after its forward,
    repeats included, retained inputs first."""
    inputs = node.inputs
    indexes = getattr(node, _chainer.NODE_RETAINED_INPUTS)
    arrays = [] if indexes is None else [
        inputs[i].data for i in indexes if inputs[i].data is not None]
    _add_attribute_arrays(node, arrays, (inputs, node.outputs))
    if type(node) is function.FunctionAdapter:
        _add_attribute_arrays(node.function, arrays)
    for ref in node.outputs:
        output = ref()
        if output is not None:
            variable = output.get_variable_or_none()
            if variable is not None:
                array = variable.raw_array
                if array is not None:
                    arrays.append(array)
    return arrays


ARRAY_TYPES = chainer.get_array_types()

# {type: kind}, one look-up per value inline: an isinstance() per value
# was most of a node's cost (benchmarks/README.md, "Memory timeline").
_OTHER, _ARRAY, _SEQUENCE, _DICT = range(4)
_KINDS = {}


def _kind(value):
    cls = type(value)
    kind = _KINDS[cls] = (
        _ARRAY if issubclass(cls, ARRAY_TYPES) else
        _SEQUENCE if issubclass(cls, (tuple, list)) else
        _DICT if issubclass(cls, dict) else _OTHER)
    return kind


def _add_attribute_arrays(obj, arrays, skip=(None, None)):
    # The arrays among ``obj``'s attributes, or in their tuples and lists
    # but ``skip``, via gc: ``vars(obj)`` would materialise a __dict__.
    kinds = _KINDS
    first, second = skip
    for value in gc.get_referents(obj):
        kind = kinds.get(type(value))
        if kind is None:
            kind = _kind(value)
        if kind == _OTHER:
            continue
        if kind == _ARRAY:
            arrays.append(value)
        elif kind == _SEQUENCE:  # (_add_items inline: most are tuples)
            if value is first or value is second:
                continue
            for item in value:
                kind = kinds.get(type(item))
                if kind is None:
                    kind = _kind(item)
                if kind == _ARRAY:
                    arrays.append(item)
        else:
            for item in value.values():
                kind = kinds.get(type(item))
                if kind is None:
                    kind = _kind(item)
                if kind == _ARRAY:
                    arrays.append(item)
                elif kind == _SEQUENCE:
                    _add_items(item, arrays)


def _add_items(sequence, arrays):
    kinds = _KINDS
    for item in sequence:
        kind = kinds.get(type(item))
        if kind is None:
            kind = _kind(item)
        if kind == _ARRAY:
            arrays.append(item)


def is_array(value):
    """Whether ``value`` is an array of a backend Chainer uses."""
    return isinstance(value, ARRAY_TYPES)


def leaf_arrays(node, in_data=()):
    """Returns the arrays of ``node``'s leaf inputs (no creator), also
    from ``in_data`` (its forward's arrays, ``None`` if unknown)."""
    arrays = []
    for i, x in enumerate(node.inputs):
        if x.creator_node is not None:
            continue
        if i < len(in_data) and in_data[i] is not None:
            arrays.append(in_data[i])
        if x.data is not None:
            arrays.append(x.data)
        variable = x.get_variable_or_none()
        if variable is not None and variable.raw_array is not None:
            arrays.append(variable.raw_array)
    return arrays

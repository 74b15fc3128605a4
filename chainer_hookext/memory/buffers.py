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


#: One buffer: ``key`` tells buffers apart (the id of the owning object),
#: ``nbytes`` its size.
Buffer = collections.namedtuple('Buffer', ('key', 'nbytes'))


def buffer_of(array):
    """Returns the :class:`Buffer` behind ``array``, or ``None``.

    ``None`` for what is not a NumPy or CuPy array (a ChainerX array, a
    scalar).

    >>> a = numpy.zeros(10, numpy.float32)
    >>> buffer_of(a[2:5]) == buffer_of(a) == Buffer(id(a), 40)
    True
    """
    if isinstance(array, numpy.ndarray):
        root = array
        while isinstance(root.base, numpy.ndarray):
            root = root.base
        if root.base is not None:  # a buffer NumPy does not own: the view's
            return Buffer(id(root), array.nbytes)
        return Buffer(id(root), root.nbytes)
    if cuda.available and isinstance(array, cuda.ndarray):
        memory = array.data.mem
        return Buffer(id(memory), memory.size)
    return None


def kept_arrays(node):
    """Returns the arrays ``node`` keeps for backward (see the module).

    Args:
        node (~chainer.FunctionNode): A node after its forward.

    Returns:
        list: The arrays, repeats included, retained inputs first.
    """
    inputs = node.inputs
    arrays = [inputs[i].data
              for i in _chainer.retained_input_indexes(node) or ()
              if inputs[i].data is not None]
    retained = _chainer.retained_output_arrays(node)
    if retained is not None:
        arrays.extend(retained)
    _add_attribute_arrays(node, arrays)
    if type(node) is function.FunctionAdapter:
        _add_attribute_arrays(node.function, arrays)
    for ref in node.outputs:
        output = ref()
        variable = None if output is None else output.get_variable_or_none()
        if variable is not None and variable.raw_array is not None:
            arrays.append(variable.raw_array)
    return arrays


def _add_attribute_arrays(obj, arrays):
    # The arrays among ``obj``'s attribute values, read through the garbage
    # collector's view of them (``vars(obj)`` would give the object a dict
    # it does not have).
    for value in _attribute_values(obj):
        if isinstance(value, (tuple, list)):
            arrays.extend(v for v in value if is_array(v))
        elif is_array(value):
            arrays.append(value)


def _attribute_values(obj):
    # Inline attributes come one by one, a materialised __dict__ as a dict;
    # the node's own structure (its inputs and outputs, the retained
    # outputs) holds no array of its own or one counted already.
    values = []
    for referent in gc.get_referents(obj):
        if isinstance(referent, dict):
            values.extend(referent.values())
        else:
            values.append(referent)
    return values


def is_array(value):
    """Whether ``value`` is an array of a backend Chainer uses."""
    return isinstance(value, chainer.get_array_types())


def leaf_arrays(node, in_data=()):
    """Returns the arrays of ``node``'s inputs made outside the graph.

    A leaf input (no creator: a parameter, the batch, a link's state, a
    constant) is not the forward's memory, even when a node keeps it.

    Args:
        node (~chainer.FunctionNode): A node after its forward.
        in_data (sequence): The arrays its forward was given, if known
            (``None`` for one no longer known): a leaf input's array is
            found there when neither its variable node nor its variable
            holds it.
    """
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

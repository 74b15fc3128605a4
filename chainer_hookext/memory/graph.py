"""Bytes kept alive for backward, per link: one walk over the graph at
the start of backward (docs/memory.md, "What counts"; ``F.forget``:
"`F.forget` candidates").

Each buffer is counted once, for the first node that keeps it, in creation
order; buffers made outside the forward (``excluded``, and the leaf inputs
of the nodes created outside every link) are not counted.
"""

import collections

import chainer

from chainer_hookext import _chainer
from chainer_hookext.memory import buffers


#: A buffer kept for backward: ``nbytes``, and the ``tags`` of the nodes
#: keeping it, each once, the first keeper's first.
KeptBuffer = collections.namedtuple('KeptBuffer', ('nbytes', 'tags'))


def kept_buffers(nodes, excluded=(), in_data=None):
    """Returns the buffers ``nodes`` keep for backward.

    Args:
        nodes (list): ``(node, tag)`` pairs in creation order; ``tag``
            names who created the node (a link's name, or ``None``: the
            leaf inputs of such a node are not counted).
        excluded (iterable): Keys of :class:`~.buffers.Buffer` s not to
            count.
        in_data (list): For each node, the arrays its forward was given
            (``None`` for one freed since): they find a leaf input no
            variable holds any more (the batch behind a view).

    Returns:
        collections.OrderedDict: ``{buffer key: KeptBuffer}``, in the order
        the buffers were first kept.
    """
    seen = set(excluded)
    if in_data is None:
        in_data = [()] * len(nodes)
    for (node, tag), arrays in zip(nodes, in_data):
        if tag is not None:
            continue
        for array in buffers.leaf_arrays(node, arrays):
            buffer = buffers.buffer_of(array)
            if buffer is not None:
                seen.add(buffer.key)
    kept = collections.OrderedDict()
    for node, tag in nodes:
        for array in buffers.kept_arrays(node):
            buffer = buffers.buffer_of(array)
            if buffer is None or buffer.key in seen:
                continue
            entry = kept.get(buffer.key)
            if entry is None:
                kept[buffer.key] = KeptBuffer(buffer.nbytes, [tag])
            elif tag not in entry.tags:
                entry.tags.append(tag)
    return kept


def bytes_per_tag(kept):
    """Returns ``{tag: bytes}``: each buffer of ``kept``
    (:func:`kept_buffers`) charged to its first keeper's tag."""
    out = collections.OrderedDict()
    for buffer in kept.values():
        tag = buffer.tags[0]
        out[tag] = out.get(tag, 0) + buffer.nbytes
    return out


def forgettable_bytes(kept, parents, inputs):
    """Returns the bytes ``F.forget`` around each link's calls would free.

    Those of the buffers kept only by nodes of the link or of links it
    calls, less the link's inputs (the ``Forget`` node keeps them).

    Args:
        kept (dict): :func:`kept_buffers`' result.
        parents (dict): ``{name: name of its caller, or None}``.
        inputs (dict): ``{name: set of the buffer keys of its calls'
            inputs}``.

    Returns:
        dict: ``{name: bytes}`` of the links freeing something.
    """
    out = {}
    for key, buffer in kept.items():
        for name in common_callers(buffer.tags, parents):
            if key not in inputs.get(name, ()):
                out[name] = out.get(name, 0) + buffer.nbytes
    return out


def callers(name, parents):
    """Returns ``name`` and the links calling it, innermost first, each once
    (a link calling itself); ``[]`` for ``None`` (outside every link)."""
    chain = []
    while name is not None and name not in chain:
        chain.append(name)
        name = parents.get(name)
    return chain


def common_callers(tags, parents):
    """Returns the links inside which every one of ``tags`` ran, innermost
    first."""
    chain = callers(tags[0], parents)
    for tag in tags[1:]:
        others = callers(tag, parents)
        chain = [name for name in chain if name in others]
    return chain


def model_buffers(links):
    """Returns the keys of the buffers of ``links``' parameters and
    persistent values (and their gradients)."""
    keys = set()
    for link in links:
        for param in link.params(include_uninit=False):
            for array in (param.array, param.grad):
                buffer = buffers.buffer_of(array)
                if buffer is not None:
                    keys.add(buffer.key)
        for name in _chainer.persistent_names(link):
            buffer = buffers.buffer_of(getattr(link, name, None))
            if buffer is not None:
                keys.add(buffer.key)
    return keys


def attribute_arrays(links):
    """Returns the arrays ``links`` hold as attributes (persistent values,
    constants such as a positional encoding's table), also inside a tuple,
    a list or a dict.  Read before the forward, they were made before it.
    """
    types = chainer.get_array_types()
    arrays = []
    for link in links:
        for value in vars(link).values():
            if isinstance(value, dict):
                value = list(value.values())
            if isinstance(value, (tuple, list)):
                arrays.extend(v for v in value if isinstance(v, types))
            elif isinstance(value, types):
                arrays.append(value)
    return arrays

"""Bytes kept alive for backward, per link: one walk over the graph at
the start of backward (docs/memory.md, "What counts").
"""

import collections
import itertools

from chainer_hookext import _chainer
from chainer_hookext.memory import buffers


#: A buffer kept for backward and the ``tags`` of its keepers, first first.
KeptBuffer = collections.namedtuple('KeptBuffer', ('nbytes', 'tags'))


def kept_buffers(nodes, excluded=(), in_data=None):
    """Returns ``{buffer key: KeptBuffer}`` of ``nodes``, first kept first.

    Args:
        nodes (list): ``(node, tag)`` in creation order; the leaf inputs of
            a node tagged ``None`` (outside every link) are not counted.
        excluded (iterable): Buffer keys not to count.
        in_data (list): Each node's forward arrays (:func:`.leaf_arrays`).
    """
    seen = set(excluded)
    for (node, tag), arrays in zip(nodes, in_data or itertools.repeat(())):
        if tag is None:
            seen.update(buffer_keys(buffers.leaf_arrays(node, arrays)))
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
    """Returns ``{tag: bytes}``, each buffer charged to its first keeper."""
    out = collections.OrderedDict()
    for buffer in kept.values():
        out[buffer.tags[0]] = out.get(buffer.tags[0], 0) + buffer.nbytes
    return out


def forgettable_bytes(kept, parents, inputs):
    """Returns ``{name: bytes}`` ``F.forget`` around a link's calls would
    free: buffers kept only inside it, less its ``inputs`` (``{name: buffer
    keys}``) the ``Forget`` node keeps."""
    out = {}
    for key, buffer in kept.items():
        for name in common_callers(buffer.tags, parents):
            if key not in inputs.get(name, ()):
                out[name] = out.get(name, 0) + buffer.nbytes
    return out


def callers(name, parents):
    """Returns ``name`` and its callers, innermost first, each once."""
    chain = []
    while name is not None and name not in chain:
        chain.append(name)
        name = parents.get(name)
    return chain


def common_callers(tags, parents):
    """Returns the links inside which all ``tags`` ran, innermost first."""
    chain = callers(tags[0], parents)
    for tag in tags[1:]:
        others = callers(tag, parents)
        chain = [name for name in chain if name in others]
    return chain


def model_buffers(links):
    """Returns the buffer keys of ``links``' parameters, gradients and
    persistent values."""
    return buffer_keys([array for link in links for param in link.params(
        include_uninit=False) for array in (param.array, param.grad)] + [
        getattr(link, name, None) for link in links
        for name in _chainer.persistent_names(link)])


def buffer_keys(arrays):
    """Returns the keys of the buffers behind ``arrays``."""
    return {buffer.key for buffer in map(buffers.buffer_of, arrays)
            if buffer is not None}


def attribute_arrays(links):
    """Returns the arrays ``links`` hold as attributes, also in a tuple, a
    list or a dict (persistent values, constants)."""
    arrays = []
    for link in links:
        for value in vars(link).values():
            if isinstance(value, dict):
                value = list(value.values())
            if isinstance(value, (tuple, list)):
                arrays.extend(filter(buffers.is_array, value))
            elif buffers.is_array(value):
                arrays.append(value)
    return arrays

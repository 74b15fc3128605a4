"""Bytes kept alive for backward, per link: one walk over the graph.

At the start of backward, the function nodes created in the measured
forward (those still alive) are walked in creation order.  Each buffer
(:mod:`.buffers`) is counted once, for the first node that keeps it: the
ReLU that retained its output, not the next ``Linear`` that retained the
same array as its input.  Buffers made outside the graph are not counted:
the leaf inputs (parameters, the batch, a link's state, constants) and the
buffers given as ``excluded`` (the model's parameters and persistent
values, even where a node keeps one as an attribute).
"""

import collections

from chainer_hookext.memory import buffers


def kept_bytes(nodes, excluded=()):
    """Returns the bytes each tag's nodes keep for backward.

    Args:
        nodes (list): ``(node, tag)`` pairs in creation order; ``tag``
            names who created the node (a link's name, or ``None``).
        excluded (iterable): Keys of :class:`~.buffers.Buffer` s not to
            count.

    Returns:
        collections.OrderedDict: ``{tag: bytes}``, tags in first-seen order
        (a tag whose nodes keep nothing new has 0).
    """
    seen = set(excluded)
    for node, _ in nodes:
        for array in buffers.leaf_arrays(node):
            buffer = buffers.buffer_of(array)
            if buffer is not None:
                seen.add(buffer.key)
    out = collections.OrderedDict()
    for node, tag in nodes:
        total = out.get(tag, 0)
        for array in buffers.kept_arrays(node):
            buffer = buffers.buffer_of(array)
            if buffer is not None and buffer.key not in seen:
                seen.add(buffer.key)
                total += buffer.nbytes
        out[tag] = total
    return out


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
        for name in link._persistent:
            buffer = buffers.buffer_of(getattr(link, name, None))
            if buffer is not None:
                keys.add(buffer.key)
    return keys

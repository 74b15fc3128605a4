"""The saved state of :class:`~chainer_hookext.TimerHook`.

:func:`save` writes, through any Chainer serializer (npz, hdf5), the merged
call trees of both modes flattened to arrays (:func:`to_arrays`) and the
backward time of nodes created outside the timed links; :func:`load` reads
them back.  Strings travel as UTF-8 JSON in ``uint8`` arrays
(:func:`encode_json`), which every serializer stores.
"""

import json

import numpy
from chainer import serializer as serializer_module

from chainer_hookext.link_hooks import _timer_tree


_MODES = ((True, 'train'), (False, 'eval'))


def save(serializer, roots, outside):
    """Writes the state with ``serializer``.

    Args:
        serializer: A Chainer serializer.
        roots (list of Record): Merged ``[eval root, train root]``.
        outside (list of Record): The records of nodes created outside the
            timed links, ``[eval, train]``.
    """
    labels, elapsed, count, backward = to_arrays(roots)
    serializer('labels', labels)
    serializer('elapsed_time', elapsed)
    serializer('occurrence', count)
    serializer('backward_time', backward)
    serializer('outside_backward_time', numpy.asarray(
        [rec.backward for rec in outside], numpy.float64))


def load(serializer):
    """Reads what :func:`save` wrote.

    Returns:
        tuple: ``(roots, outside seconds)``: label-keyed ``[eval root,
        train root]`` and the outside backward seconds ``[eval, train]``;
        ``None`` when a non-strict deserializer has no state.  A state
        saved before backward timing existed loads with zero backward
        times.
    """
    labels = serializer('labels', None)
    if labels is None:
        return None
    elapsed = serializer('elapsed_time', None)
    count = serializer('occurrence', None)
    try:
        backward = serializer('backward_time', None)
        outside = serializer('outside_backward_time', None)
    except KeyError:  # a strict deserializer, an older state
        backward = outside = None
    roots = from_arrays(labels, elapsed, count, backward)
    outside = [0.0, 0.0] if outside is None else [
        float(seconds) for seconds in numpy.ravel(outside)]
    return roots, outside


def is_loading(serializer):
    """Returns whether ``serializer`` reads (a Chainer deserializer)."""
    return isinstance(serializer, serializer_module.Deserializer)


def to_arrays(roots):
    """Flattens ``[eval root, train root]`` to four arrays for serializers.

    Returns:
        tuple: ``labels`` (UTF-8 JSON of ``[mode, depth, name, path,
        class]`` rows as ``uint8``), ``elapsed`` (``float64``), ``count``
        (``int64``) and ``backward`` (``float64``), rows in pre-order.
    """
    rows, elapsed, count, backward = [], [], [], []
    for train, mode in _MODES:
        for depth, node, _ in _timer_tree.walk(roots[train]):
            rows.append([mode, depth] + list(node.labels))
            elapsed.append(node.elapsed)
            count.append(node.count)
            backward.append(node.backward)
    return (encode_json(rows), numpy.asarray(elapsed, numpy.float64),
            numpy.asarray(count, numpy.int64),
            numpy.asarray(backward, numpy.float64))


def from_arrays(labels, elapsed, count, backward=None):
    """Inverse of :func:`to_arrays`: ``[eval root, train root]``.

    ``backward=None`` (a state saved before backward timing) gives zeros.
    """
    rows = decode_json(labels)
    elapsed = numpy.asarray(elapsed, numpy.float64).ravel()
    count = numpy.asarray(count, numpy.int64).ravel()
    if backward is None:
        backward = numpy.zeros_like(elapsed)
    backward = numpy.asarray(backward, numpy.float64).ravel()
    if not len(rows) == len(elapsed) == len(count) == len(backward):
        raise ValueError(
            'TimerHook.serialize: the state is inconsistent ({} labels, {} '
            'times, {} counts, {} backward times).'.format(
                len(rows), len(elapsed), len(count), len(backward)))
    roots = [_timer_tree.Record(), _timer_tree.Record()]
    modes = dict((mode, train) for train, mode in _MODES)
    path, current = [], None
    for (mode, depth, *labels), seconds, calls, back in zip(
            rows, elapsed, count, backward):
        if mode != current:
            path, current = [], mode
        if mode not in modes or not 0 <= depth <= len(path):
            raise ValueError(
                'TimerHook.serialize: bad row {!r} in the state.'.format(
                    [mode, depth] + labels))
        del path[depth:]
        parent = path[-1] if path else roots[modes[mode]]
        labels = tuple(labels)
        node = parent.children[labels] = _timer_tree.Record(labels=labels)
        node.elapsed = float(seconds)
        node.count = int(calls)
        node.backward = float(back)
        path.append(node)
    return roots


def encode_json(obj):
    """Returns ``obj`` as UTF-8 JSON in a ``uint8`` array (npz and hdf5)."""
    data = json.dumps(obj).encode('utf-8')
    return numpy.frombuffer(data, numpy.uint8).copy()


def decode_json(array):
    """Inverse of :func:`encode_json`."""
    return json.loads(numpy.asarray(array, numpy.uint8).tobytes().decode(
        'utf-8'))

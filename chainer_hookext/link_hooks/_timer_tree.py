"""Call trees of :class:`~chainer_hookext.TimerHook`.

A :class:`Record` is one node of a call tree: a link called under a given
parent call.  While timing, children are keyed by the link object (the hot
path looks them up with ``children.get(link)``); accumulated state that no
longer refers to links (state of a finished registration, or loaded from a
snapshot) is kept in trees keyed by labels ``(name, path, class name)``.
:func:`merge` folds one tree into another by labels, so memory is bounded by
the number of distinct call paths, never by the number of calls.
"""

import collections
import json

import numpy


_MODES = ((True, 'train'), (False, 'eval'))
KEYS = {'name': 0, 'path': 1, 'class': 2}


class Record(object):
    """A node of a call tree.

    Attributes:
        link: The link while timing (``None`` in label-keyed trees).
        start: ``time.perf_counter()`` at the start of the running call, or
            at the end of the last one once it returned; a CUDA event for
            links on a GPU.
        elapsed (float): Inclusive seconds of the finished calls.
        count (int): Number of finished calls.
        parent (Record): Where the stack returns when this call ends.
        children (dict): Child nodes, keyed by link or by labels.
        labels (tuple): ``(name, path, class name)``; ``None`` for the root.
        hidden (bool): A link out of the hook's scope, timed only to keep
            the stack balanced: its time is its parent's self time.
    """

    __slots__ = ('link', 'start', 'elapsed', 'count', 'parent', 'children',
                 'labels', 'hidden')

    def __init__(self, link=None, parent=None, labels=None, hidden=False):
        self.link = link
        self.start = 0.0
        self.elapsed = 0.0
        self.count = 0
        self.parent = parent
        self.children = {}
        self.labels = labels
        self.hidden = hidden


def merge(src, dst):
    """Adds the tree under ``src`` to the label-keyed tree under ``dst``.

    Hidden nodes of ``src`` are left out and their children lifted to the
    nearest timed ancestor.
    """
    todo = [(src, dst)]
    while todo:
        src, dst = todo.pop()
        for child in src.children.values():
            if child.hidden:
                todo.append((child, dst))
                continue
            node = dst.children.get(child.labels)
            if node is None:
                node = dst.children[child.labels] = Record(
                    labels=child.labels)
            node.elapsed += child.elapsed
            node.count += child.count
            todo.append((child, node))


def walk(root, postorder=False):
    """Yields ``(depth, node, self_time)`` for each node of a merged tree."""
    stack = [(0, node) for node in reversed(list(root.children.values()))]
    done = []
    while stack:
        depth, node = stack.pop()
        if node is None:
            yield done.pop()
            continue
        self_time = node.elapsed - sum(
            c.elapsed for c in node.children.values())
        item = depth, node, max(self_time, 0.0)
        if postorder:
            done.append(item)
            stack.append((depth, None))
        else:
            yield item
        stack.extend((depth + 1, child)
                     for child in reversed(list(node.children.values())))


def summarize(root, by):
    """Returns ``{key: {'elapsed_time', 'self_time', 'occurrence'}}``.

    Keys are names, paths or class names (``by``), in order of first call,
    or for classes in order of first return as Chainer's ``TimerHook``.
    """
    index = KEYS[by]
    summary = collections.OrderedDict()
    for _, node, self_time in walk(root, postorder=(by == 'class')):
        key = node.labels[index]
        entry = summary.get(key)
        if entry is None:
            entry = summary[key] = {
                'elapsed_time': 0.0, 'self_time': 0.0, 'occurrence': 0}
        entry['elapsed_time'] += node.elapsed
        entry['self_time'] += self_time
        entry['occurrence'] += node.count
    return summary


def to_arrays(roots):
    """Flattens ``[eval root, train root]`` to three arrays for serializers.

    Returns:
        tuple: ``labels`` (UTF-8 JSON of ``[mode, depth, name, path,
        class]`` rows as ``uint8``), ``elapsed`` (``float64``) and
        ``count`` (``int64``), rows in pre-order.
    """
    rows, elapsed, count = [], [], []
    for train, mode in _MODES:
        for depth, node, _ in walk(roots[train]):
            rows.append([mode, depth] + list(node.labels))
            elapsed.append(node.elapsed)
            count.append(node.count)
    return (encode_json(rows), numpy.asarray(elapsed, numpy.float64),
            numpy.asarray(count, numpy.int64))


def from_arrays(labels, elapsed, count):
    """Inverse of :func:`to_arrays`: ``[eval root, train root]``."""
    rows = decode_json(labels)
    elapsed = numpy.asarray(elapsed, numpy.float64).ravel()
    count = numpy.asarray(count, numpy.int64).ravel()
    if not len(rows) == len(elapsed) == len(count):
        raise ValueError(
            'TimerHook.serialize: the state is inconsistent ({} labels, {} '
            'times, {} counts).'.format(len(rows), len(elapsed), len(count)))
    roots = [Record(), Record()]
    modes = dict((mode, train) for train, mode in _MODES)
    path, current = [], None
    for (mode, depth, *labels), seconds, calls in zip(rows, elapsed, count):
        if mode != current:
            path, current = [], mode
        if mode not in modes or not 0 <= depth <= len(path):
            raise ValueError(
                'TimerHook.serialize: bad row {!r} in the state.'.format(
                    [mode, depth] + labels))
        del path[depth:]
        parent = path[-1] if path else roots[modes[mode]]
        labels = tuple(labels)
        node = parent.children[labels] = Record(labels=labels)
        node.elapsed = float(seconds)
        node.count = int(calls)
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

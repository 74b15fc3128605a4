"""Call trees of :class:`~chainer_hookext.TimerHook`.

A :class:`Record` is one node of a call tree: a link called under a given
parent call.  While timing, children are keyed by the link object (the hot
path looks them up with ``children.get(link)``); accumulated state that no
longer refers to links (state of a finished registration, or loaded from a
snapshot) is kept in trees keyed by labels ``(name, path, class name)``.
:func:`merge` folds one tree into another by labels, so memory is bounded by
the number of distinct call paths, never by the number of calls.

Backward steps are charged to records too (``Record.backward``, self time
only; see :mod:`~chainer_hookext.link_hooks._backward_timer`); inclusive
backward times are sums over sub-trees, computed when a summary is asked
for.
"""

import collections


KEYS = {'name': 0, 'path': 1, 'class': 2}
#: Summary key of the backward steps of nodes created outside timed links.
OUTSIDE = '(outside)'


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
        backward (float): Seconds of the backward steps of the function
            nodes created in the link's own forward (its backward self
            time).
        sink (Record): The record that backward steps of nodes tagged with
            this one are charged to: itself, the nearest timed ancestor of a
            hidden record, or, once the record is retired, the record it was
            merged into.
    """

    __slots__ = ('link', 'start', 'elapsed', 'count', 'parent', 'children',
                 'labels', 'hidden', 'backward', 'sink')

    def __init__(self, link=None, parent=None, labels=None, hidden=False):
        self.link = link
        self.start = 0.0
        self.elapsed = 0.0
        self.count = 0
        self.parent = parent
        self.children = {}
        self.labels = labels
        self.hidden = hidden
        self.backward = 0.0
        self.sink = parent.sink if hidden else self


def merge(src, dst, retire=False):
    """Adds the tree under ``src`` to the label-keyed tree under ``dst``.

    Hidden nodes of ``src`` are left out and their children lifted to the
    nearest timed ancestor.

    Args:
        retire (bool): ``src`` is dropped afterwards: its records let go of
            their links and children, and their backward charges go on to
            the records of ``dst`` (function nodes of a graph built before
            may still be tagged with them).
    """
    todo = [(src, dst)]
    while todo:
        src, dst = todo.pop()
        for child in src.children.values():
            if child.hidden:
                node = dst
                node.backward += child.backward
            else:
                node = dst.children.get(child.labels)
                if node is None:
                    node = dst.children[child.labels] = Record(
                        labels=child.labels)
                node.elapsed += child.elapsed
                node.count += child.count
                node.backward += child.backward
            todo.append((child, node))
            if retire:
                child.sink = node
        if retire:
            src.link = src.parent = None
            src.children = {}


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


def backward_totals(root):
    """Returns ``{node: inclusive backward seconds}`` of a merged tree."""
    totals = {}
    for _, node, _ in walk(root, postorder=True):
        totals[node] = node.backward + sum(
            totals[child] for child in node.children.values())
    return totals


def summarize(root, by):
    """Returns ``{key: {'elapsed_time', 'self_time', 'occurrence'}}``.

    Keys are names, paths or class names (``by``), in order of first call,
    or for classes in order of first return as Chainer's ``TimerHook``.
    Names and paths also have ``'backward_time'`` (inclusive) and
    ``'backward_self_time'``.
    """
    index = KEYS[by]
    inclusive = None if by == 'class' else backward_totals(root)
    summary = collections.OrderedDict()
    for _, node, self_time in walk(root, postorder=(by == 'class')):
        key = node.labels[index]
        entry = summary.get(key)
        if entry is None:
            entry = summary[key] = {
                'elapsed_time': 0.0, 'self_time': 0.0, 'occurrence': 0}
            if inclusive is not None:
                entry['backward_time'] = entry['backward_self_time'] = 0.0
        entry['elapsed_time'] += node.elapsed
        entry['self_time'] += self_time
        entry['occurrence'] += node.count
        if inclusive is not None:
            entry['backward_time'] += inclusive[node]
            entry['backward_self_time'] += node.backward
    return summary

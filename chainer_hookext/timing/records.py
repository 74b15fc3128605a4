"""Call trees: where a timer keeps its figures, one record per call path.

A :class:`CallRecord` is a link called under a parent call; :func:`merge`
folds it into a stored tree, :func:`entries` turns that into :class:`Entry`
rows, the one shape that tables, keys, the ChainerMN gather and snapshots
share.  docs/internals.md ("Adding a per-link figure") says how a counted
figure goes from here to its key.
"""

import collections


#: The modes timed apart, by ``chainer.config.train``: each has its trees.
MODES = ('train', 'eval')

#: The name of the backward steps of nodes created outside every timed
#: link (a loss computed in the updater).
OUTSIDE = '(outside)'

#: What names a record: its reporter-style name (``main/predictor/l1``, or
#: the path without a scope), its path from the root (``/predictor/l1``) and
#: its class name.
Labels = collections.namedtuple('Labels', ('name', 'path', 'class_name'))

#: A figure a :class:`CallRecord` adds up per call path, besides its time:
#: ``attribute`` of the record (the link's own share), the :class:`Entry`
#: fields it gives, ``inclusive`` (summed over the link's callees) and
#: ``own`` (the link's own; ``None``: not a field), ``zero`` (its type's)
#: and ``cost`` (counted with ``flops=True`` only).
Count = collections.namedtuple(
    'Count', ('attribute', 'inclusive', 'own', 'zero', 'cost'))

#: The counted figures of a record, in :class:`Entry` order.  A counted
#: figure of a link is one line here, the code that adds to its attribute,
#: and its :class:`~chainer_hookext.report.keys.Figure`.
COUNTS = (
    Count('backward', 'backward_time', 'backward_self_time', 0.0, False),
    Count('flops', 'flops', 'self_flops', 0, True),
    Count('backward_flops', 'backward_flops', 'backward_self_flops', 0,
          True),
    Count('bytes', 'bytes', None, 0, True),
    Count('backward_bytes', 'backward_bytes', None, 0, True),
)

#: One row of a summary.  ``key`` is a name, path or class name;
#: ``parent`` the key of its first caller (``None`` at the top); times in
#: seconds; ``occurrence`` the number of calls; FLOPs and bytes moved
#: (counted with ``flops=True``, see :mod:`chainer_hookext.costs`) of the
#: function nodes created in the link's forward, inclusive or self, and of
#: the nodes applied in their backward (0 by default).
Entry = collections.namedtuple('Entry', (
    'key', 'parent', 'elapsed_time', 'self_time', 'occurrence') + tuple(
    field for count in COUNTS for field in (count.inclusive, count.own)
    if field is not None), defaults=tuple(
    count.zero for count in COUNTS for field in (count.inclusive, count.own)
    if field is not None))

#: The numeric fields of an :class:`Entry`.
FIELDS = tuple(f for f in Entry._fields if f not in ('key', 'parent'))
#: The fields counted only with ``flops=True``.
COST_FIELDS = tuple(
    field for count in COUNTS if count.cost
    for field in (count.inclusive, count.own) if field is not None)

#: One function type's figures in one link's self figures (``functions=True``,
#: :class:`FunctionRecord`): ``link`` is the link's key (or :data:`OUTSIDE`),
#: ``function`` the node's class name (``LinearFunction``); ``time`` the
#: forward seconds of its nodes, ``backward_time`` their backward steps';
#: ``occurrence`` the nodes applied; FLOPs as in :class:`Entry`, backward
#: those of the gradient nodes applied in the steps.
FunctionEntry = collections.namedtuple('FunctionEntry', (
    'link', 'function', 'time', 'backward_time', 'occurrence', 'flops',
    'backward_flops'), defaults=(0, 0))

#: The numeric fields of a :class:`FunctionEntry`.
FUNCTION_FIELDS = tuple(
    f for f in FunctionEntry._fields if f not in ('link', 'function'))


class FunctionRecord:
    """The figures of one function type under one call record.

    A link's self figures split by the class of its function nodes
    (``TimerHook(functions=True)``); kept per call path and type, never
    per node.

    Attributes:
        name (str): The node's class name (:func:`.costs.flops.name_of`).
        forward (float): Seconds of the forward of its nodes.
        count (int): Nodes applied.
        backward (float): Seconds of their backward steps.
        flops, backward_flops (int): Their FLOPs, forward and of the
            gradient nodes applied in their steps (``flops=True``).
    """

    __slots__ = ('name', 'forward', 'count', 'backward', 'flops',
                 'backward_flops')

    def __init__(self, name):
        self.name = name
        self.forward = self.backward = 0.0
        self.count = self.flops = self.backward_flops = 0

    def add(self, other):
        """Adds the figures of ``other``, a record of the same type."""
        self.forward += other.forward
        self.count += other.count
        self.backward += other.backward
        self.flops += other.flops
        self.backward_flops += other.backward_flops


class _Sums:
    """The sums of one key's records, as :func:`entries` adds them up."""

    __slots__ = Entry._fields

    def __init__(self, key, parent):
        self.key = key
        self.parent = parent
        self.elapsed_time = self.self_time = 0.0
        self.occurrence = 0
        for count in COUNTS:
            for field in (count.inclusive, count.own):
                if field is not None:
                    setattr(self, field, count.zero)

    def entry(self):
        return Entry(**{f: getattr(self, f) for f in Entry._fields})


def empty_entry(key, parent=None):
    """Returns the :class:`Entry` of a key with no time and no call.

    >>> empty_entry('main')
    Entry(key='main', parent=None, elapsed_time=0.0, self_time=0.0, \
occurrence=0, backward_time=0.0, backward_self_time=0.0, flops=0, \
self_flops=0, backward_flops=0, backward_self_flops=0, bytes=0, \
backward_bytes=0)
    """
    return _Sums(key, parent).entry()


class CallRecord:
    """A node of a call tree.

    Attributes:
        key: The key of the record among its parent's children: the link,
            the link's class (a link outside the model), or its labels in a
            stored tree.
        labels (Labels): ``None`` for a root and for a link out of scope.
        parent (CallRecord): Where the stack returns when this call ends.
        children (dict): Child records by key.
        start (float): The clock's time (:func:`.clock.now`) when the
            running call started.
        start_event: The CUDA event recorded then, for a link on a GPU.
        last_end (float): The clock's time when its last call ended.
        call_number: On a GPU, the number of the running call (calls are
            numbered as they start; events are reused, numbers are not).
        ended_in: On a GPU, the ``call_number`` of the parent's call in
            which its last call ended.
        loop_code: The code that called a child of its link again within
            one call, found to run inside that call (a loop).
        elapsed (float): Inclusive seconds of the ended calls.
        count (int): Number of ended calls.
        backward (float): Seconds of the backward steps of the nodes created
            in the link's own forward (its backward self time).
        flops, bytes (int): FLOPs and bytes of the function nodes created
            in the link's own forward (with ``flops=True``).
        backward_flops, backward_bytes (int): Those of the nodes applied in
            the backward steps of its nodes (its backward self cost).
            These five are :data:`COUNTS`' attributes.
        unknown (dict): ``{function class name: nodes}`` charged to the
            record that have no formula (:func:`.costs.flops.count`), or
            ``None`` when there was none.
        functions (dict): With ``functions=True``, its self figures by
            function type: ``{node class: FunctionRecord}`` (by class name
            in a stored tree), or ``None`` when none was applied.
        charged (CallRecord): The record charged for this record's backward
            steps and costs: itself; for a link out of scope, its nearest timed
            ancestor; after :func:`merge` with ``move=True``, the stored
            record.
        out_of_scope (bool): A link out of scope, kept on the stack so that it
            stays balanced: its time is its parent's self time.
    """

    __slots__ = ('key', 'labels', 'parent', 'children', 'start',
                 'start_event', 'call_number', 'last_end', 'ended_in',
                 'loop_code',
                 'elapsed', 'count', 'charged', 'out_of_scope',
                 'unknown', 'functions') + tuple(c.attribute for c in COUNTS)

    def __init__(self, key=None, parent=None, labels=None,
                 out_of_scope=False):
        self.key = key
        self.labels = labels
        self.parent = parent
        self.children = {}
        self.start = 0.0
        self.start_event = None
        self.call_number = None
        self.last_end = 0.0
        self.ended_in = None
        self.loop_code = None
        self.elapsed = 0.0
        self.count = 0
        for count in COUNTS:
            setattr(self, count.attribute, count.zero)
        self.unknown = None
        self.functions = None
        self.out_of_scope = out_of_scope
        self.charged = parent.charged if out_of_scope else self


def merge(src, dst, move=False):
    """Adds the tree under ``src`` to the stored tree under ``dst``.

    Hidden records are left out, their children lifted to the nearest timed
    ancestor.  Safe while another thread times into ``src``: each dict is
    copied in one step (atomic under the GIL).

    Args:
        move (bool): ``src`` is dropped afterwards: its records let go of
            their keys and children, and charge later backward steps (of
            nodes still alive) to the stored records.
    """
    todo = [(src, dst)]
    while todo:
        src, dst = todo.pop()
        for child in list(src.children.values()):
            if child.out_of_scope:
                node = dst
            else:
                node = dst.children.get(child.labels)
                if node is None:
                    node = dst.children[child.labels] = CallRecord(
                        child.labels, labels=child.labels)
                node.elapsed += child.elapsed
                node.count += child.count
            node.backward += child.backward
            add_costs(child, node)
            todo.append((child, node))
            if move:
                child.charged = node
        if move:
            src.key = src.parent = None
            src.children = {}


def function_record(rec, key, name=None):
    """Returns the :class:`FunctionRecord` under ``rec`` keyed by ``key``
    (a node's class, or its name in a stored record), made when first
    asked for and named ``name`` (by default ``key``)."""
    functions = rec.functions
    if functions is None:
        functions = rec.functions = {}
    one = functions.get(key)
    if one is None:
        one = functions[key] = FunctionRecord(key if name is None else name)
    return one


def add_costs(src, dst):
    """Adds every counted figure of ``src`` (:data:`COUNTS`) but its
    backward time, its unknown nodes and function types' figures to ``dst``
    (those of a stored record keyed by class name)."""
    if src.functions:
        for one in list(src.functions.values()):
            function_record(dst, one.name).add(one)
    for attribute in _ADDED:
        setattr(dst, attribute, getattr(dst, attribute) + getattr(
            src, attribute))
    if src.unknown:
        if dst.unknown is None:
            dst.unknown = {}
        for name, nodes in list(src.unknown.items()):
            dst.unknown[name] = dst.unknown.get(name, 0) + nodes


#: What :func:`add_costs` adds.
_ADDED = tuple(c.attribute for c in COUNTS if c.attribute != 'backward')


def walk(root):
    """Yields ``(depth, record)`` for each record under ``root``, pre-order.
    """
    stack = [(0, r) for r in reversed(list(root.children.values()))]
    while stack:
        depth, record = stack.pop()
        yield depth, record
        stack.extend((depth + 1, child)
                     for child in reversed(list(record.children.values())))


def entries(root, by):
    """Returns the :class:`Entry` rows of a stored tree, one per key.

    Records with the same key (a link called from two places) are summed.
    A record under an ancestor of the same key (a link calling itself) adds
    its self times and calls, not its inclusive times, so that inclusive
    time counts the outermost activation once.

    Args:
        root (CallRecord): A stored tree.
        by (str): ``'name'``, ``'path'`` or ``'class_name'``.

    Returns:
        list of Entry: In order of first call.
    """
    sums = collections.OrderedDict()

    def visit(record, parent_key, ancestors):
        # Returns the sub-tree's sums of the COUNTS attributes.
        own = record.elapsed - sum(c.elapsed for c in record.children.values())
        key = getattr(record.labels, by)
        row = sums.get(key)
        if row is None:
            row = sums[key] = _Sums(key, parent_key)
        tree = [getattr(record, count.attribute) for count in COUNTS]
        for child in record.children.values():
            tree = [a + b for a, b in zip(
                tree, visit(child, key, ancestors | {key}))]
        if key not in ancestors:
            row.elapsed_time += record.elapsed
            for count, value in zip(COUNTS, tree):
                setattr(row, count.inclusive,
                        getattr(row, count.inclusive) + value)
        row.self_time += max(own, 0.0)
        row.occurrence += record.count
        for count in COUNTS:
            if count.own is not None:
                setattr(row, count.own, getattr(row, count.own) + getattr(
                    record, count.attribute))
        return tree

    for child in root.children.values():
        visit(child, None, frozenset())
    return [row.entry() for row in sums.values()]


def function_entries(root, by, outside=None):
    """Returns the :class:`FunctionEntry` rows of a stored tree.

    Records with the same key are summed, as in :func:`entries`.

    Args:
        root (CallRecord): A stored tree.
        by (str): ``'name'`` or ``'path'``.
        outside (CallRecord): The record of nodes made outside every link,
            whose rows come last under :data:`OUTSIDE`.

    Returns:
        list of FunctionEntry: Links in order of first call, each's types
        in order of first application.
    """
    sums = collections.OrderedDict()  # {(link key, name): FunctionRecord}
    counted = [(getattr(record.labels, by), record)
               for _, record in walk(root)]
    if outside is not None:
        counted.append((OUTSIDE, outside))
    for key, record in counted:
        for one in (record.functions or {}).values():
            mine = sums.get((key, one.name))
            if mine is None:
                mine = sums[key, one.name] = FunctionRecord(one.name)
            mine.add(one)
    return [FunctionEntry(key, name, one.forward, one.backward, one.count,
                          one.flops, one.backward_flops)
            for (key, name), one in sums.items()]


def class_entries(root):
    """Returns the :class:`Entry` rows by class name, as Chainer's hook.

    As Chainer's ``TimerHook``: every call's inclusive time summed per
    class, classes in order of first return.  No backward times.
    """
    sums = collections.OrderedDict()

    def visit(record):
        for child in record.children.values():
            visit(child)
        own = record.elapsed - sum(c.elapsed for c in record.children.values())
        key = record.labels.class_name
        row = sums.get(key)
        if row is None:
            row = sums[key] = _Sums(key, None)
        row.elapsed_time += record.elapsed
        row.self_time += max(own, 0.0)
        row.occurrence += record.count

    for child in root.children.values():
        visit(child)
    return [row.entry() for row in sums.values()]

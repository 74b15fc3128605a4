"""Call trees: one :class:`CallRecord` per call path, summed into
:class:`Entry` rows (docs/internals.md, "Adding a per-link figure")."""

import collections


#: The modes timed apart, by ``chainer.config.train``.
MODES = ('train', 'eval')

#: The name of nodes created outside every timed link (docs/timing.md,
#: "Backward time per link").
OUTSIDE = '(outside)'

#: A record's reporter-style name (``main/predictor/l1``), path from the
#: root (``/predictor/l1``) and class name.
Labels = collections.namedtuple('Labels', ('name', 'path', 'class_name'))

#: A figure a :class:`CallRecord` adds up besides its time: its record
#: ``attribute``, :class:`Entry` fields (``own`` may be ``None``), ``zero``;
#: ``cost``: counted with ``flops=True`` only.
Count = collections.namedtuple(
    'Count', ('attribute', 'inclusive', 'own', 'zero', 'cost'))

#: The counted figures of a record, in :class:`Entry` order.
COUNTS = (
    Count('backward', 'backward_time', 'backward_self_time', 0.0, False),
    Count('flops', 'flops', 'self_flops', 0, True),
    Count('backward_flops', 'backward_flops', 'backward_self_flops', 0,
          True),
    Count('bytes', 'bytes', None, 0, True),
    Count('backward_bytes', 'backward_bytes', None, 0, True),
)

_COUNTED = tuple((field, count) for count in COUNTS
                 for field in (count.inclusive, count.own) if field)

#: One row of a summary: ``key`` a name, path or class name, ``parent`` its
#: first caller's, seconds, calls, then the :data:`COUNTS` fields.
Entry = collections.namedtuple('Entry', (
    'key', 'parent', 'elapsed_time', 'self_time', 'occurrence') + tuple(
    field for field, _ in _COUNTED), defaults=tuple(
    count.zero for _, count in _COUNTED))

FIELDS = tuple(f for f in Entry._fields if f not in ('key', 'parent'))
COST_FIELDS = tuple(field for field, count in _COUNTED if count.cost)

#: One function type's share of a link's self figures (``functions=True``);
#: ``link`` may be :data:`OUTSIDE`.
FunctionEntry = collections.namedtuple('FunctionEntry', (
    'link', 'function', 'time', 'backward_time', 'occurrence', 'flops',
    'backward_flops'), defaults=(0, 0))

FUNCTION_FIELDS = tuple(
    f for f in FunctionEntry._fields if f not in ('link', 'function'))


class FunctionRecord:
    """One function type's figures under one call record."""

    __slots__ = ('name', 'forward', 'count', 'backward', 'flops',
                 'backward_flops')

    def __init__(self, name):
        self.name = name
        self.forward = self.backward = 0.0
        self.count = self.flops = self.backward_flops = 0

    def add(self, other):
        self.forward += other.forward
        self.count += other.count
        self.backward += other.backward
        self.flops += other.flops
        self.backward_flops += other.backward_flops


class _Sums:
    __slots__ = Entry._fields

    def __init__(self, key, parent):
        for field, value in empty_entry(key, parent)._asdict().items():
            setattr(self, field, value)

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
    return Entry(key=key, parent=parent, elapsed_time=0.0, self_time=0.0,
                 occurrence=0)


class CallRecord:
    """A node of a call tree (docs/internals.md, "How backward time is
    charged to links"); its :data:`COUNTS` attributes are self figures.

    Attributes:
        key: The link, its class (a link outside the model), or its labels
            in a stored tree.
        call_number, ended_in: On a GPU, the running call's number, and
            the parent's call number its last call ended in.
        loop_code: The code found calling a child again in one call.
        unknown (dict): ``{class name: nodes}`` with no FLOP formula.
        charged (CallRecord): Charged for its backward steps and costs:
            itself, its nearest timed ancestor, or the stored record.
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
        self.start = self.last_end = self.elapsed = 0.0
        self.start_event = self.call_number = self.ended_in = None
        self.loop_code = self.unknown = self.functions = None
        self.count = 0
        for count in COUNTS:
            setattr(self, count.attribute, count.zero)
        self.out_of_scope = out_of_scope
        self.charged = parent.charged if out_of_scope else self


def merge(src, dst, move=False):
    """Adds the tree under ``src`` to the stored tree under ``dst`` (safe
    while another thread times into ``src``); with ``move``, ``src``'s
    records let go of their keys and children, and charge later steps to
    the stored records."""
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
    """Returns ``rec``'s :class:`FunctionRecord` of ``key``, made if new."""
    functions = rec.functions
    if functions is None:
        functions = rec.functions = {}
    one = functions.get(key)
    if one is None:
        one = functions[key] = FunctionRecord(key if name is None else name)
    return one


def add_costs(src, dst):
    """Adds ``src``'s figures but time and ``backward`` to ``dst``."""
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


_ADDED = tuple(c.attribute for c in COUNTS if c.attribute != 'backward')


def walk(root):
    """Yields ``(depth, record)`` under ``root``, pre-order."""
    stack = [(0, r) for r in reversed(list(root.children.values()))]
    while stack:
        depth, record = stack.pop()
        yield depth, record
        stack.extend((depth + 1, child)
                     for child in reversed(list(record.children.values())))


def entries(root, by):
    """Returns the :class:`Entry` rows of a stored tree, one per key
    (``by``: a :class:`Labels` field), in order of first call; a link
    calling itself counts in inclusive figures once."""
    sums = collections.OrderedDict()

    def visit(record, parent_key, ancestors):  # the sub-tree's COUNTS
        own = record.elapsed - sum(c.elapsed for c in record.children.values())
        key = getattr(record.labels, by)
        row = sums.get(key)
        if row is None:  # not setdefault: no row made per record
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


def function_entries(root, by, outside):
    """Returns a stored tree's :class:`FunctionEntry` rows, ``outside``'s last.
    """
    sums = collections.OrderedDict()  # {(link key, name): FunctionRecord}
    for key, record in [(getattr(record.labels, by), record)
                        for _, record in walk(root)] + [(OUTSIDE, outside)]:
        for one in (record.functions or {}).values():
            row = sums.get((key, one.name))
            if row is None:
                row = sums[key, one.name] = FunctionRecord(one.name)
            row.add(one)
    return [FunctionEntry(key, name, one.forward, one.backward, one.count,
                          one.flops, one.backward_flops)
            for (key, name), one in sums.items()]


def class_entries(root):
    """Returns the :class:`Entry` rows by class as Chainer's TimerHook does.
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

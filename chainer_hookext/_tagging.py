"""Which link's forward created a function node: a :class:`NodeTagger`
stores a tag on each new node in forward and reads it back in backward
(docs/internals.md, "Node tagging": why plain attributes, the slots).
"""

import functools
import itertools
import threading

import chainer

from chainer_hookext import _copies
from chainer_hookext import _observer
from chainer_hookext import _registry


#: The attribute holding a node's tag, as written in the timers' methods.
TAG = '_chainer_hookext_tag'

_slots_in_use = {}  # {(thread, tag name): set of slots held}
_MISSING = object()


def new_tagger(cls, *args, **kwargs):
    """``cls(*args, **kwargs)`` with a free slot, registered once."""
    tagger = cls(*args, **kwargs)
    tagger._slot_key = (threading.get_ident(), tagger.tag_name)
    held = _slots_in_use.setdefault(tagger._slot_key, set())
    tagger.slot = next(n for n in itertools.count() if n not in held)
    held.add(tagger.slot)
    if tagger.slot:
        tagger.tag_of = tagger.tag_in_slot
        for event in _observer.EVENTS[chainer.FunctionHook]:
            if getattr(cls, event) is not getattr(chainer.FunctionHook, event):
                tagger.use_method(event)
    tagger.register()
    return tagger


def register(tagger, cls, *args):
    """Registers ``tagger`` once more, or makes one when it is ``None``:
    ``self._tagger = register(self._tagger, cls, self)``."""
    if tagger is None:
        return new_tagger(cls, *args)
    tagger.register()
    return tagger


def unregister(tagger):
    """Takes back one :func:`register`; ``tagger``, or ``None`` once gone.
    """
    if tagger is None:
        return None
    tagger.unregister()
    return tagger if tagger.registered else None


class NodeTagger(chainer.FunctionHook):
    """Function hook storing a tag as :attr:`tag_name` in forward, read in
    backward with :meth:`tag_of`; counted registration, the last
    :meth:`unregister` freeing its ``slot`` (made by :func:`new_tagger`).
    """

    name = 'NodeTagger'
    first = False  # registered before the thread's other function hooks
    tag_name = TAG  # the attribute of the tag at slot 0

    def __reduce__(self):
        # A copy holds none: a tagger belongs to one thread.
        return _copies.same, (None,)

    def __init__(self, name=None):
        if name is not None:
            self.name = name
        self.slot = None
        self._slot_key = None  # (its thread, tag_name)
        self._count = 0
        self._handle = None
        self._spent = False

    @property
    def registered(self):
        return self._handle is not None

    @property
    def extra_name(self):
        """The node attribute of the tags of slots 1 and above."""
        return f'{self.tag_name}_extra'

    def tag_of(self, function):
        """The tag of ``function``, or ``None``."""
        try:
            return function._chainer_hookext_tag
        except AttributeError:
            return None

    def tag_in_slot(self, function):
        """:meth:`tag_of` at slots 1 and above."""
        tags = getattr(function, self.extra_name, None)
        return None if tags is None else tags.get(self.slot)

    def nodes_read(self, function):
        """The nodes whose tags a method for ``function`` reads or writes.
        """
        return (function,)

    # Attributes, never vars(node): on Python 3.11 vars() moves a node's
    # attributes into a dict, and Chainer's every later read is slower.
    def tags_in(self, nodes):
        """Puts each node's tag of this slot under :attr:`tag_name`."""
        name = self.tag_name
        saved = []
        for node in nodes:
            first = getattr(node, name, _MISSING)
            if first is not _MISSING:
                delattr(node, name)
            saved.append(first)
            tag = getattr(node, self.extra_name, {}).get(self.slot, _MISSING)
            if tag is not _MISSING:
                setattr(node, name, tag)
        return saved

    def tags_out(self, nodes, saved):
        """Undoes :meth:`tags_in`."""
        name = self.tag_name
        for node, first in zip(nodes, saved):
            tag = getattr(node, name, _MISSING)
            if tag is not _MISSING:
                delattr(node, name)
                tags = getattr(node, self.extra_name, None)
                if tags is None:
                    tags = {}
                    setattr(node, self.extra_name, tags)
                tags[self.slot] = tag
            if first is not _MISSING:
                setattr(node, name, first)

    def use_method(self, event, method=None):
        """:func:`~chainer_hookext._observer.use_method`, run between
        :meth:`tags_in` and :meth:`tags_out` at slots 1 and above."""
        if self.slot:
            if method is None:
                method = getattr(type(self), event).__get__(self)
            method = functools.partial(_in_slot, self, method)
        _observer.use_method(self, event, method)

    def register(self):
        if self._spent:
            raise RuntimeError(
                f'{type(self).__name__}.register: this tagger was '
                'unregistered and its slot freed; make a new one with '
                'new_tagger().')
        self._count += 1
        if self._handle is None:
            self._handle = _registry.add(
                chainer.get_function_hooks(), self, first=self.first)

    def put_first(self, first):
        """Moves the tagger before the other function hooks, or after."""
        self.first = first
        handle = self._handle
        if handle is not None:
            _observer.move(handle.registry, handle.key, self, first)

    def unregister(self):
        """Takes back one :meth:`register`; the last removes the hook."""
        self._count = max(self._count - 1, 0)
        if self._count or self._handle is None:
            return
        handle, self._handle = self._handle, None
        self._spent = True
        if self.slot is not None:
            held = _slots_in_use[self._slot_key]
            held.discard(self.slot)
            if not held:
                del _slots_in_use[self._slot_key]
            self.slot = None
        _registry.remove(handle, self)


def _in_slot(tagger, method, function, *args):
    nodes = tagger.nodes_read(function)
    saved = tagger.tags_in(nodes)
    try:
        method(function, *args)
    finally:
        tagger.tags_out(nodes, saved)

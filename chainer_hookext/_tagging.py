"""Which link's forward created a function node: a :class:`NodeTagger`
stores a tag on each new node in forward and reads it back in backward
(docs/internals.md, "Node tagging": why plain attributes, the slots).
"""

import functools
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
    """Returns ``cls(*args, **kwargs)``, a :class:`NodeTagger` subclass,
    with a free slot, registered once; its last
    :meth:`~NodeTagger.unregister` frees the slot."""
    tagger = cls(*args, **kwargs)
    tagger._slot_key = (threading.get_ident(), tagger.tag_name)
    held = _slots_in_use.setdefault(tagger._slot_key, set())
    slot = 0
    while slot in held:
        slot += 1
    held.add(slot)
    tagger.slot = slot
    if slot:
        tagger.tag_of = tagger.tag_in_slot
        for event in _observer.EVENTS[chainer.FunctionHook]:
            if getattr(cls, event) is not getattr(chainer.FunctionHook, event):
                tagger.use_method(event)
    tagger.register()
    return tagger


def register(tagger, cls, *args):
    """Registers ``tagger`` once more and returns it, or
    ``new_tagger(cls, *args)`` when it is ``None`` (a link hook's
    ``added``: ``self._tagger = register(self._tagger, cls, self)``)."""
    if tagger is None:
        return new_tagger(cls, *args)
    tagger.register()
    return tagger


def unregister(tagger):
    """Takes back one :func:`register` (in ``deleted``); returns
    ``tagger`` while still registered, else ``None``."""
    if tagger is None:
        return None
    tagger.unregister()
    return tagger if tagger.registered else None


class NodeTagger(chainer.FunctionHook):
    """Function hook tagging nodes in forward; made by :func:`new_tagger`.

    Subclasses store the tag in ``forward_preprocess`` as the plain
    attribute :attr:`tag_name` and read it in backward with :meth:`tag_of`.
    Registration is counted; the last :meth:`unregister` frees the slot and
    spends the tagger.

    Attributes:
        slot (int): Its slot (docs/internals.md, "Node tagging"); ``None``
            when freed.
    """

    name = 'NodeTagger'
    #: Whether to be registered before the thread's other function hooks.
    first = False
    #: The attribute holding the tag of the tagger at slot 0.
    tag_name = TAG

    def __reduce__(self):
        # A copy of a hook holding a tagger holds none: it makes a new one
        # when next added (a tagger belongs to one thread).
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
        """Whether the tagger is in the thread's function hooks."""
        return self._handle is not None

    @property
    def extra_name(self):
        """The attribute of a node holding the tags of slots 1 and above."""
        return f'{self.tag_name}_extra'

    def tag_of(self, function):
        """Returns the tag of ``function``, or ``None`` when it has none."""
        try:
            return function._chainer_hookext_tag
        except AttributeError:
            return None

    def tag_in_slot(self, function):
        """:meth:`tag_of` at slots 1 and above."""
        tags = vars(function).get(self.extra_name)
        return None if tags is None else tags.get(self.slot)

    def nodes_read(self, function):
        """The nodes whose tags a method called for ``function`` reads or
        writes (at slots 1 and above)."""
        return (function,)

    def tags_in(self, nodes):
        """Puts each node's tag of this slot under :attr:`tag_name`;
        returns what :meth:`tags_out` puts back."""
        name = self.tag_name
        saved = []
        for node in nodes:
            attributes = vars(node)
            saved.append(attributes.pop(name, _MISSING))
            tag = attributes.get(self.extra_name, {}).get(self.slot, _MISSING)
            if tag is not _MISSING:
                attributes[name] = tag
        return saved

    def tags_out(self, nodes, saved):
        """Moves each node's tag of this slot back, and the tag of slot 0
        back under :attr:`tag_name`."""
        name = self.tag_name
        for node, first in zip(nodes, saved):
            attributes = vars(node)
            tag = attributes.pop(name, _MISSING)
            if tag is not _MISSING:
                attributes.setdefault(self.extra_name, {})[self.slot] = tag
            if first is not _MISSING:
                attributes[name] = first

    def use_method(self, event, method=None):
        """:func:`~chainer_hookext._observer.use_method`, run between
        :meth:`tags_in` and :meth:`tags_out` at slots 1 and above."""
        if self.slot:
            if method is None:
                method = getattr(type(self), event).__get__(self)
            method = functools.partial(_in_slot, self, method)
        _observer.use_method(self, event, method)

    def register(self):
        """Registers the tagger once more (counted)."""
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
        """Moves the tagger before the thread's other function hooks
        (``first``), or after them."""
        self.first = first
        if self._handle is not None:
            _registry.move(self._handle, self, first)

    def unregister(self):
        """Takes back one :meth:`register`; the last one removes the hook."""
        if self._count > 0:
            self._count -= 1
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

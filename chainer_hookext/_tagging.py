"""Which link's forward created a function node: one tag per node.

A :class:`NodeTagger` stores a tag on each new node in forward and reads it
back in backward; the design, and why tags are plain attributes, is in
docs/internals.md, "Node tagging".
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
    """Returns a registered ``cls(*args, **kwargs)`` with a free slot.

    Args:
        cls (type): A :class:`NodeTagger` subclass.

    Returns:
        NodeTagger: The tagger, registered once in the thread's function
        hooks; its last :meth:`~NodeTagger.unregister` frees the slot.
    """
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
    """Registers ``tagger`` once more, or a new one when it is ``None``.

    The set-up of a link hook's tagger in its ``added``:
    ``self._tagger = register(self._tagger, cls, self)``.

    Returns:
        NodeTagger: ``tagger``, or ``new_tagger(cls, *args)``.
    """
    if tagger is None:
        return new_tagger(cls, *args)
    tagger.register()
    return tagger


def unregister(tagger):
    """Takes back one :func:`register`; the tear-down in ``deleted``.

    Returns:
        NodeTagger: ``tagger`` while still registered, else ``None``.
    """
    if tagger is None:
        return None
    tagger.unregister()
    return tagger if tagger.registered else None


class NodeTagger(chainer.FunctionHook):
    """Function hook tagging nodes in forward; made by :func:`new_tagger`.

    Subclasses override ``forward_preprocess`` to store the tag as a plain
    attribute named :attr:`tag_name` (``function._chainer_hookext_tag =
    value``) and read it in backward with :meth:`tag_of` (or the attribute
    itself, catching ``AttributeError`` for a node created before the
    tagger was registered).

    The first tagger of a :attr:`tag_name` in a thread holds slot 0: its
    methods run as written.  A second one registered at the same time (two
    timers in one thread) holds slot 1, and so on: its tags are kept in a
    dict on each node, ``{slot: tag}`` under the attribute
    :attr:`extra_name`, and each of its methods runs between
    :meth:`tags_in` (the node's tag of its slot put under :attr:`tag_name`)
    and :meth:`tags_out` (put back).

    Registration is counted: each :meth:`register` needs one
    :meth:`unregister`; the last one removes the hook and frees its slot,
    after which the tagger is spent.

    Attributes:
        slot (int): The slot, set by :func:`new_tagger`; ``None`` when
            freed.
    """

    name = 'NodeTagger'
    #: Whether to be registered before the thread's other function hooks.
    first = False
    #: The attribute holding the tag of the tagger at slot 0.
    tag_name = TAG

    def __reduce__(self):
        # A pickle or a copy of a hook holding a tagger (the trainer's,
        # during training) holds none: it makes a new one when it is next
        # added.  The tagger itself is registered in one thread.
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
        """Returns the tag of ``function`` at this tagger's slot (1 or
        above), or ``None``: its :meth:`tag_of`."""
        tags = vars(function).get(self.extra_name)
        return None if tags is None else tags.get(self.slot)

    def nodes_read(self, function):
        """The nodes whose tag a method called for ``function`` reads or
        writes (at slots 1 and above): ``function`` here."""
        return (function,)

    def tags_in(self, nodes):
        """Puts each node's tag of this slot under :attr:`tag_name`.

        Returns:
            list: What :meth:`tags_out` puts back.
        """
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
        """:func:`~chainer_hookext._observer.use_method` for this tagger:
        ``method`` (a bound method, or ``None``: the class's) is what the
        observers call for ``event``, between :meth:`tags_in` and
        :meth:`tags_out` at slots 1 and above."""
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
        """Moves the registered tagger before the thread's other function
        hooks (``first``), or after them."""
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
    # A method of a tagger at slot 1 or above, on the tags of its slot.
    nodes = tagger.nodes_read(function)
    saved = tagger.tags_in(nodes)
    try:
        method(function, *args)
    finally:
        tagger.tags_out(nodes, saved)

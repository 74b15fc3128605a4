"""Which link's forward created a function node: one tag per node.

A :class:`NodeTagger` stores a tag on each new node in forward and reads it
back in backward; the design, and why tags are plain attributes, is in
docs/internals.md, "Node tagging".
"""

import types

import chainer

from chainer_hookext import _copies
from chainer_hookext import _registry


#: The attribute holding a node's tag, as written in the taggers' methods.
TAG = '_chainer_hookext_tag'

_tag_numbers_in_use = set()
_classes = {}  # {(class, tag number): class whose methods name that tag}


def new_tagger(cls, *args, **kwargs):
    """Returns a registered ``cls(*args, **kwargs)`` with a free tag number.

    Args:
        cls (type): A :class:`NodeTagger` subclass.

    Returns:
        NodeTagger: The tagger, registered once in the thread's function
        hooks; its last :meth:`~NodeTagger.unregister` frees the tag number.
    """
    if cls.tag_name is not None:  # an attribute of its own: no number
        tagger = cls(*args, **kwargs)
    else:
        tag_number = 0
        while tag_number in _tag_numbers_in_use:
            tag_number += 1
        tagger = _class_for_tag_number(cls, tag_number)(*args, **kwargs)
        tagger.tag_number = tag_number
        _tag_numbers_in_use.add(tag_number)
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


def _class_for_tag_number(cls, tag_number):
    if tag_number == 0:
        return cls
    made = _classes.get((cls, tag_number))
    if made is None:
        name = f'{TAG}_{tag_number}'
        namespace = {}
        for klass in reversed(cls.__mro__):  # the most derived one wins
            for attr, value in vars(klass).items():
                if (isinstance(value, types.FunctionType)
                        and TAG in value.__code__.co_names):
                    namespace[attr] = _renamed(value, name)
                else:  # an override that does not touch the tag
                    namespace.pop(attr, None)
        made = type(cls.__name__, (cls,), namespace)
        _classes[cls, tag_number] = made
    return made


def _renamed(function, name):
    code = function.__code__
    code = code.replace(co_names=tuple(
        name if n == TAG else n for n in code.co_names))
    return types.FunctionType(code, function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)


class NodeTagger(chainer.FunctionHook):
    """Function hook tagging nodes in forward; made by :func:`new_tagger`.

    Subclasses override ``forward_preprocess`` to store the tag with
    ``function._chainer_hookext_tag = value`` and read it in backward with
    :meth:`tag_of` (or the attribute itself, catching ``AttributeError``
    for a node created before the tagger was registered).

    Registration is counted: each :meth:`register` needs one
    :meth:`unregister`; the last one removes the hook and frees its tag number,
    after which the tagger is spent.

    Attributes:
        tag_number (int): The tag number, set by :func:`new_tagger`.
    """

    name = 'NodeTagger'
    #: Whether to be registered before the thread's other function hooks.
    first = False
    #: The attribute of a tagger that is one per thread and writes its own
    #: (the links tagger's, ``_chainer_hookext_links``): it takes no tag
    #: number.  ``None``: :data:`TAG`, numbered.
    tag_name = None

    def __reduce__(self):
        # A pickle or a copy of a hook holding a tagger (the trainer's,
        # during training) holds none: it makes a new one when it is next
        # added.  The tagger itself is registered in one thread, under a
        # tag number held for it (a numbered class is made per process).
        return _copies.same, (None,)

    def __init__(self, name=None):
        if name is not None:
            self.name = name
        self.tag_number = None
        self._count = 0
        self._handle = None
        self._spent = False

    @property
    def registered(self):
        """Whether the tagger is in the thread's function hooks."""
        return self._handle is not None

    def tag_of(self, function):
        """Returns the tag of ``function``, or ``None`` when it has none."""
        try:
            return function._chainer_hookext_tag
        except AttributeError:
            return None

    def register(self):
        """Registers the tagger once more (counted)."""
        if self._spent:
            raise RuntimeError(
                f'{type(self).__name__}.register: this tagger was '
                'unregistered and its tag number freed; make a new one with '
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
        """Answers one :meth:`register`; the last one removes the hook."""
        if self._count > 0:
            self._count -= 1
        if self._count or self._handle is None:
            return
        handle, self._handle = self._handle, None
        self._spent = True
        if self.tag_number is not None:
            _tag_numbers_in_use.discard(self.tag_number)
            self.tag_number = None
        _registry.remove(handle, self)

"""What a pickle or a deep copy holds in place of the package's stand-ins,
and whether an owner holds one (:func:`own_attribute`) (docs/internals.md,
"What the package sets, and where it is put back").
"""


class LEAVE_OUT:
    """:func:`put_back`'s ``original`` for none: the entry goes (a class,
    which a pickle keeps itself)."""


class Placeholder:
    """A stand-in's placeholder with nothing in it (:func:`put_back`)."""
    __slots__ = ()


def own_attribute(obj, name, default=None):
    """``obj``'s own attribute ``name`` (not its class's, nor a method of
    its class bound to it), or ``default``.  Never ``vars(obj)``: on Python
    3.11 that moves an object's attributes into a dict, and every later
    read of one, Chainer's too, is slower."""
    value = getattr(obj, name, default)
    in_class = getattr(type(obj), name, default)
    if value is in_class or getattr(value, '__self__', None) is obj and (
            getattr(value, '__func__', None) is in_class):
        return default
    return value


def put_back(owner, original, placeholder):
    """For a stand-in's ``__reduce__``: ``owner``'s copy gets a one-call
    ``__setstate__`` putting ``original`` (:data:`LEAVE_OUT`: nothing)
    where ``placeholder``, returned, is in its state (or a dict in it)."""
    attributes = vars(owner)
    setstate = attributes.get('__setstate__')
    if not isinstance(setstate, _PutBack):
        if attributes:  # state set: reached another way first; it stays
            return placeholder
        setstate = attributes['__setstate__'] = _PutBack(owner)
    setstate.originals[id(placeholder)] = placeholder, original
    return placeholder


class _PutBack:
    # The __setstate__ of one owner's copy, for one call.

    def __init__(self, owner):
        self.owner = owner
        self.originals = {}  # {id(placeholder): (placeholder, original)}

    def __call__(self, state):
        owner, self.owner = self.owner, None
        del vars(owner)['__setstate__']
        slots = None
        if isinstance(state, tuple):
            state, slots = state
        state = dict(state or {})
        self._put_back(state)
        for value in list(state.values()):
            if isinstance(value, dict):
                self._put_back(value)
        setstate = getattr(type(owner), '__setstate__', None)
        if setstate is not None:  # the owner's class sets its own state
            setstate(owner, state if slots is None else (state, slots))
            return
        vars(owner).update(state)
        for name, value in (slots or {}).items():
            setattr(owner, name, value)

    def _put_back(self, values):
        for key, value in list(values.items()):
            placeholder, original = self.originals.get(id(value), (self, None))
            if placeholder is not value:  # ``self``: none in its place
                continue
            if original is LEAVE_OUT:
                del values[key]
            else:
                values[key] = original


def same(value):
    """``(same, (original,))`` unpickles a stand-in as its original."""
    return value

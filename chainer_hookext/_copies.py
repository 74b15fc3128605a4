"""What a pickle or a deep copy holds in place of the package's stand-ins
(docs/internals.md, "What the package sets").

A stand-in's ``__reduce__`` gives the original (:func:`same`).  An entry of
a dict or an attribute cannot be taken out that way: :func:`put_back` gives
the owner's copy a one-call ``__setstate__`` that puts the originals back
(or takes the entries out) in the state before it is set.
"""


class LEAVE_OUT:
    """:func:`put_back`'s ``original`` when the stand-in has none: the
    entry or attribute is taken out.  A class: pickled by reference, it
    stays itself."""


class Placeholder:
    """A stand-in's placeholder with nothing in it (:func:`put_back`)."""
    __slots__ = ()


def put_back(owner, original, placeholder):
    """For a stand-in's ``__reduce__``: ``(put_back, (owner, original,
    placeholder))``.

    Args:
        owner: The object whose state (or a dict in it) holds the stand-in.
        original: What the owner's copy holds in the stand-in's place, or
            :data:`LEAVE_OUT`.
        placeholder: What is unpickled in the stand-in's place: in the
            owner's state until it is set, and wherever else the stand-in
            was (a reference of the package's own).

    Returns:
        ``placeholder``.
    """
    attributes = vars(owner)
    setstate = attributes.get('__setstate__')
    if not isinstance(setstate, _PutBack):
        if attributes:  # its state is set: the stand-in was reached first
            return placeholder  # another way; it stays
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
        originals = self.originals
        for key, value in list(values.items()):
            found = originals.get(id(value))
            if found is None or found[0] is not value:
                continue
            if found[1] is LEAVE_OUT:
                del values[key]
            else:
                values[key] = found[1]


def same(value):
    """Returns ``value``: ``(same, (original,))`` is a stand-in's
    ``__reduce__`` that unpickles as its original."""
    return value

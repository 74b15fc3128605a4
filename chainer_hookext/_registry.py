"""Adding a hook to a thread's link or function hook registry, or to an
optimizer, and removing exactly it (docs/internals.md, "What the package
sets, and where it is put back").

Keys are ``chainer_hookext.<name>`` (``_1``, ``_2`` ... when taken): the
plain names stay free for the user's hooks, and two of ours never collide.
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext import _copies
from chainer_hookext import _observer


#: What the keys of this package's registrations start with.
PREFIX = 'chainer_hookext.'


def add(registry, hook, first=False):
    """Makes ``hook`` a listener of ``registry``'s observer
    (:mod:`._observer`) under a free key, called before the package's other
    hooks there if ``first`` (its work done before they read the clock);
    returns the :class:`Registration` for :func:`remove`.
    """
    key = free_key(_observer.listeners(registry).keys() | registry.keys(),
                   hook.name)
    _observer.join(registry, key, hook, first)
    return Registration(registry, key)


def registered(registry):
    """Returns ``{key: hook}`` of the package's hooks in ``registry``, in
    the order Chainer calls them."""
    return _observer.listeners(registry)


class Registration(collections.namedtuple(
        'Registration', ('registry', 'key'))):
    """What :func:`add` returns; a pickle or copy of it is ``None`` (the
    copy's hook is registered nowhere)."""

    __slots__ = ()

    def __reduce__(self):
        return _copies.same, (None,)


def free_key(taken, name):
    """Returns ``'chainer_hookext.' + name``, then ``_1``, ``_2`` ... until
    it is not in ``taken``."""
    base = key = PREFIX + name
    n = 0
    while key in taken:
        n += 1
        key = f'{base}_{n}'
    return key


def move(handle, hook, first):
    """Moves ``hook`` before the package's other hooks in its registry
    (``first``), or after them."""
    if handle is not None:
        _observer.move(handle.registry, handle.key, hook, first)


def remove(handle, hook):
    """Takes out ``hook`` (``handle`` from :func:`add`) and calls its
    ``deleted``; nothing when the key no longer holds it or ``handle`` is
    ``None`` (a copy's)."""
    if handle is None:
        return
    registry, key = handle
    _observer.leave(registry, key, hook)


class OptimizerHook:
    """Base of this package's optimizer hooks: called once per update.

    A pickle or deep copy of its optimizer has the user's hooks only.
    """

    call_for_each_param = False
    registered_in = None  # the optimizer's _hookable while added

    def __reduce__(self):
        if self.registered_in is None:
            return _inert, ()
        return _copies.put_back, (
            self.registered_in, _copies.LEAVE_OUT, INERT)


class InertOptimizerHook:
    """What a hook of ours pickled alone becomes (earlier versions pickled
    every one so); :func:`add_optimizer_hook` removes those it finds."""

    call_for_each_param = False

    def __call__(self, optimizer):
        pass

    def __reduce__(self):
        return _inert, ()


INERT = InertOptimizerHook()


def _inert():
    return INERT


def add_optimizer_hook(optimizer, hook, name, timing, first=False):
    """Adds ``hook`` to ``optimizer`` (``timing`` ``'pre'`` or ``'post'``)
    under a free key from ``name``, before the hooks added earlier if
    ``first``; first removes any :class:`InertOptimizerHook`.  Returns the
    handle for :func:`remove_optimizer_hook`.
    """
    for when in ('pre', 'post'):
        hooks = _chainer.optimizer_hooks(optimizer, when)
        for key in [k for k, h in hooks.items() if k.startswith(PREFIX)
                    and isinstance(h, InertOptimizerHook)]:
            del hooks[key]
    hooks = _chainer.optimizer_hooks(optimizer, timing)
    key = free_key(hooks.keys() | _chainer.optimizer_hooks(
        optimizer, 'post' if timing == 'pre' else 'pre').keys(), name)
    optimizer.add_hook(hook, name=key, timing=timing)
    if first:
        hooks.move_to_end(key, last=False)
    hook.registered_in = _chainer.optimizer_hook_container(optimizer)
    return optimizer, timing, key, hook


def remove_optimizer_hook(handle):
    """Removes the hook :func:`add_optimizer_hook` added, if still there."""
    optimizer, timing, key, hook = handle
    hook.registered_in = None
    if _chainer.optimizer_hooks(optimizer, timing).get(key) is hook:
        optimizer.remove_hook(key)

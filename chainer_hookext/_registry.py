"""Adding a hook to a thread's hook registry or an optimizer under a key
``chainer_hookext.<name>[_1...]``, and removing exactly it
(docs/internals.md, "What the package sets, and where it is put back").
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext import _copies
from chainer_hookext import _observer


PREFIX = 'chainer_hookext.'


def add(registry, hook, first=False):
    """Makes ``hook`` a listener of ``registry``'s observer under a free
    key (before the package's others if ``first``); returns the
    :class:`Registration` for :func:`remove`."""
    key = free_key(_observer.listeners(registry).keys() | registry.keys(),
                   hook.name)
    _observer.join(registry, key, hook, first)
    return Registration(registry, key)


#: ``registered(registry)``: ``{key: hook}`` of the package's hooks in it.
registered = _observer.listeners


class Registration(collections.namedtuple(
        'Registration', ('registry', 'key'))):
    """What :func:`add` returns; a copy of it is ``None``."""

    __slots__ = ()

    def __reduce__(self):
        return _copies.same, (None,)


def free_key(taken, name):
    """The first of ``PREFIX + name``, then ``_1``, ``_2`` ... not taken."""
    base = key = PREFIX + name
    n = 0
    while key in taken:
        n += 1
        key = f'{base}_{n}'
    return key


def remove(handle, hook):
    """Takes out ``hook`` and calls its ``deleted``, if still there."""
    if handle is not None:
        _observer.leave(handle.registry, handle.key, hook)


class OptimizerHook:
    """Base of the package's optimizer hooks: called once per update; a
    copy of its optimizer has the user's hooks only."""

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
    """Adds ``hook`` to ``optimizer`` under a free key from ``name``
    (before the earlier hooks if ``first``), removing any
    :class:`InertOptimizerHook`; returns the handle."""
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

"""Adding a hook to one of Chainer's registries, and removing it.

Chainer keeps the global link hooks (``chainer._get_link_hooks()``) and
function hooks (``chainer.get_function_hooks()``) of each thread in an
``OrderedDict`` keyed by hook name.  :func:`add` makes a hook a listener
of the registry's one entry of this package (:mod:`._observer`), under a
free key of its own (``chainer_hookext.<name>``), so that the plain names
stay free for the user's hooks (``with chainer.link_hooks.TimerHook():``
inside training) and two hooks with the same ``name`` never collide;
:func:`remove` takes out exactly what :func:`add` put in, and nothing the
user registered.
:func:`add_optimizer_hook` and :func:`remove_optimizer_hook` do the same
for an optimizer's hooks.
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext import _copies
from chainer_hookext import _observer


#: What the keys of this package's registrations start with.
PREFIX = 'chainer_hookext.'


def add(registry, hook, first=False):
    """Makes ``hook`` a listener of the registry's observer, under a free
    key, then calls its ``added(None)``.

    The registry then holds one entry of the package's, whatever the number
    of its hooks there (:mod:`._observer`).  The key is
    ``'chainer_hookext.' + hook.name``, followed by ``'_1'``, ``'_2'`` ...
    when taken.  If ``hook.added(None)`` raises, the hook is taken out
    again.

    Args:
        registry (dict): A registry returned by ``chainer._get_link_hooks()``
            or ``chainer.get_function_hooks()``.
        hook: A :class:`chainer.LinkHook` or :class:`chainer.FunctionHook`.
        first (bool): Call it before the package's other hooks there (its
            work is done before they read the clock).

    Returns:
        Registration: ``(registry, key)``, the handle for :func:`remove`.
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
    """What :func:`add` returns.  A pickle or a copy of it (of an
    extension during training) is ``None``: the copy's hook is registered
    nowhere, and a thread's registry is never copied."""

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
        key = '{}_{}'.format(base, n)
    return key


def move(handle, hook, first):
    """Moves ``hook``, added with :func:`add`, before the package's other
    hooks in its registry (``first``), or after them."""
    if handle is not None:
        _observer.move(handle.registry, handle.key, hook, first)


def remove(handle, hook):
    """Takes out ``hook`` added with :func:`add`, then calls deleted.

    Does nothing when the key no longer holds ``hook``, or when ``handle``
    is ``None`` (a copy's).

    Args:
        handle (Registration): What :func:`add` returned.
        hook: The hook given to :func:`add`.
    """
    if handle is None:
        return
    registry, key = handle
    _observer.leave(registry, key, hook)


class OptimizerHook(object):
    """Base of this package's optimizer hooks: called once per update.

    A pickle or a deep copy of an optimizer holding one holds nothing of
    this package: the copy has the user's hooks only, in their order
    (:mod:`chainer_hookext._copies`), and feeds none of the figures.
    """

    call_for_each_param = False
    #: The optimizer's hook container (Chainer's ``_OptimizerHookable``)
    #: while :func:`add_optimizer_hook` has added it.
    registered_in = None

    def __reduce__(self):
        if self.registered_in is None:
            return _inert, ()
        return _copies.put_back, (
            self.registered_in, _copies.LEAVE_OUT, INERT)


class InertOptimizerHook(object):
    """A hook doing nothing: what a hook of this package pickled alone
    becomes (and what earlier versions pickled every one as);
    :func:`add_optimizer_hook` removes those it finds."""

    call_for_each_param = False

    def __call__(self, optimizer):
        pass

    def __reduce__(self):
        return _inert, ()


#: The one :class:`InertOptimizerHook`.
INERT = InertOptimizerHook()


def _inert():
    return INERT


def add_optimizer_hook(optimizer, hook, name, timing, first=False):
    """Adds ``hook`` to ``optimizer`` under a free key of this package's.

    Hooks of this package that do nothing (:class:`InertOptimizerHook`,
    left by an older pickle) are removed first.

    Args:
        optimizer (~chainer.Optimizer): A set-up optimizer.
        hook (OptimizerHook): The hook.
        name (str): Its name, after ``chainer_hookext.``.
        timing (str): ``'pre'`` or ``'post'``.
        first (bool): Call it before the hooks of the same timing added
            earlier (a ``pre`` hook timing the user's ``WeightDecay``).

    Returns:
        tuple: The handle for :func:`remove_optimizer_hook`.
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
    # The container _chainer.optimizer_hooks reads the dicts of.
    hook.registered_in = _chainer.optimizer_hook_container(optimizer)
    return optimizer, timing, key, hook


def remove_optimizer_hook(handle):
    """Removes the hook :func:`add_optimizer_hook` added, if still there."""
    optimizer, timing, key, hook = handle
    hook.registered_in = None
    if _chainer.optimizer_hooks(optimizer, timing).get(key) is hook:
        optimizer.remove_hook(key)

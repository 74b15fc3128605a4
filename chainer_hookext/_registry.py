"""Adding a hook to one of Chainer's registries, and removing it.

Chainer keeps the global link hooks (``chainer._get_link_hooks()``) and
function hooks (``chainer.get_function_hooks()``) of each thread in an
``OrderedDict`` keyed by hook name, and refuses a second hook of the same
name.  :func:`add` registers under a free key of this package's own
(``chainer_hookext.<name>``), so that the plain names stay free for the
user's hooks (``with chainer.link_hooks.TimerHook():`` inside training) and
two hooks with the same ``name`` never collide; :func:`remove` takes out
exactly what :func:`add` put in, and nothing the user registered.
:func:`add_optimizer_hook` and :func:`remove_optimizer_hook` do the same
for an optimizer's hooks.
"""

from chainer_hookext import _chainer


#: What the keys of this package's registrations start with.
PREFIX = 'chainer_hookext.'


def add(registry, hook):
    """Registers ``hook`` in ``registry`` under a free key, then calls added.

    The key is ``'chainer_hookext.' + hook.name``, followed by ``'_1'``,
    ``'_2'`` ... when taken.  If ``hook.added(None)`` raises, the hook is
    taken out again.

    Args:
        registry (dict): A registry returned by ``chainer._get_link_hooks()``
            or ``chainer.get_function_hooks()``.
        hook: A :class:`chainer.LinkHook` or :class:`chainer.FunctionHook`.

    Returns:
        tuple: ``(registry, key)``, the handle for :func:`remove`.
    """
    key = free_key(registry, hook.name)
    registry[key] = hook
    try:
        hook.added(None)
    except BaseException:
        del registry[key]
        raise
    return registry, key


def free_key(taken, name):
    """Returns ``'chainer_hookext.' + name``, then ``_1``, ``_2`` ... until
    it is not in ``taken``."""
    base = key = PREFIX + name
    n = 0
    while key in taken:
        n += 1
        key = '{}_{}'.format(base, n)
    return key


def remove(handle, hook):
    """Unregisters ``hook`` added with :func:`add`, then calls deleted.

    Does nothing when the key no longer holds ``hook``.

    Args:
        handle (tuple): What :func:`add` returned.
        hook: The hook given to :func:`add`.
    """
    registry, key = handle
    if registry.get(key) is hook:
        del registry[key]
        hook.deleted(None)


class OptimizerHook(object):
    """Base of this package's optimizer hooks: called once per update.

    A copy or a pickle of an optimizer holding one gets an
    :class:`InertOptimizerHook` in its place, which does nothing: the copy
    updates as without this package, and feeds none of its figures.
    """

    call_for_each_param = False

    def __reduce__(self):
        return InertOptimizerHook, ()


class InertOptimizerHook(object):
    """What a copied or unpickled optimizer holds for an
    :class:`OptimizerHook`: a hook doing nothing."""

    call_for_each_param = False

    def __call__(self, optimizer):
        pass


def add_optimizer_hook(optimizer, hook, name, timing, first=False):
    """Adds ``hook`` to ``optimizer`` under a free key of this package's.

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
    hooks = _chainer.optimizer_hooks(optimizer, timing)
    key = free_key(hooks.keys() | _chainer.optimizer_hooks(
        optimizer, 'post' if timing == 'pre' else 'pre').keys(), name)
    optimizer.add_hook(hook, name=key, timing=timing)
    if first:
        hooks.move_to_end(key, last=False)
    return optimizer, timing, key, hook


def remove_optimizer_hook(handle):
    """Removes the hook :func:`add_optimizer_hook` added, if still there."""
    optimizer, timing, key, hook = handle
    if _chainer.optimizer_hooks(optimizer, timing).get(key) is hook:
        optimizer.remove_hook(key)

"""Training and evaluation modes: cheap reads, and the flags that pick them.

``chainer.config.train`` goes through ``LocalConfig.__getattr__`` and costs
about 400 ns, as much as a whole empty link hook.  :func:`is_train` reads the
same value from the thread-local dictionary that ``chainer.using_config``
writes, falling back to the global configuration, at a fraction of the cost.
"""

import collections

from chainer import configuration


_local = configuration.config._local
_global = configuration.global_config

#: The modes a hook or an extension acts in: ``train`` (bool) while
#: ``chainer.config.train`` is true, ``eval`` (bool) while it is false.
Modes = collections.namedtuple('Modes', 'train eval')


def is_train():
    """Returns ``chainer.config.train`` for the calling thread."""
    value = _local.__dict__.get('train', _local)
    if value is _local:
        return _global.train
    return value


def check_modes(call, train, eval):
    """Validates a pair of ``train`` / ``eval`` flags.

    Args:
        call (str): The call to name in the error, e.g. ``'CallbackHook'``.
        train (bool): Whether to act in training mode.
        eval (bool): Whether to act in evaluation mode.

    Raises:
        ValueError: When both flags are false.
    """
    if not (train or eval):
        raise ValueError(
            '`{}(train={!r}, eval={!r})` would never fire: enable training '
            'mode, evaluation mode or both.'.format(call, train, eval))


def is_recomputing():
    """Returns ``chainer.config.in_recomputing`` (``F.forget``'s backward).
    """
    value = _local.__dict__.get('in_recomputing', _local)
    if value is _local:
        return _global.in_recomputing
    return value

"""Cheap reads of ``chainer.config.train``.

``chainer.config.train`` goes through ``LocalConfig.__getattr__`` and costs
about 400 ns, as much as a whole empty link hook.  :func:`is_train` reads the
same value from the thread-local dictionary that ``chainer.using_config``
writes, falling back to the global configuration, at a fraction of the cost.
"""

from chainer import configuration


_local = configuration.config._local
_global = configuration.global_config


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

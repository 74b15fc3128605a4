"""Training and evaluation modes: cheap reads, and the flags that pick them.

``chainer.config.train`` goes through ``LocalConfig.__getattr__`` and costs
about 400 ns, as much as a whole empty link hook.  :func:`is_train` reads the
same value from the thread-local dictionary that ``chainer.using_config``
writes, falling back to the global configuration, at a fraction of the cost.

The constructors of the hooks and extensions check their arguments here:
:func:`check_flag` (True or False), :func:`check_name` (a non-empty string)
and :func:`check_modes` (``train`` / ``eval``).  Each raises ``ValueError``
naming the call (``type(self).__name__``: the class the user called), the
bad value with ``!r``, and what works.
"""

import collections

import numpy
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


def check_flag(call, arg, value, none=None):
    """Returns ``value`` as a ``bool``, or raises unless it is True or False.

    Args:
        call (str): The call to name in the error, e.g. ``'CaptureOutputs'``.
        arg (str): The argument's name, e.g. ``'copy'``.
        value: The value given.
        none (str): What ``None`` means, when ``None`` is accepted too
            (returned as it is); ``None`` (default) refuses it.

    Raises:
        ValueError: ``'`CaptureOutputs(copy='no')` is not a flag: use True or
        False.'``

    >>> check_flag('CaptureOutputs', 'copy', numpy.True_)
    True
    >>> check_flag('CaptureOutputs', 'copy', 'no')
    Traceback (most recent call last):
    ...
    ValueError: `CaptureOutputs(copy='no')` is not a flag: use True or False.
    """
    if value is None and none is not None:
        return None
    if not isinstance(value, (bool, numpy.bool_)):
        raise ValueError('`{}({}={!r})` is not a flag: use {}.'.format(
            call, arg, value, 'True or False' if none is None
            else 'True, False or None ({})'.format(none)))
    return bool(value)


def check_name(call, arg, value):
    """Raises unless ``value`` is a non-empty string.

    Args:
        call (str): The call to name in the error, e.g. ``'CallbackHook'``.
        arg (str): The argument's name, e.g. ``'name'``.
        value: The value given.

    Raises:
        ValueError: ``'`CallbackHook(name=3)` is not a name: use a non-empty
        string.'``
    """
    if not (isinstance(value, str) and value):
        raise ValueError('`{}({}={!r})` is not a name: use a non-empty '
                         'string.'.format(call, arg, value))


def check_modes(call, train, eval):
    """Validates a pair of ``train`` / ``eval`` flags.

    Args:
        call (str): The call to name in the error, e.g. ``'CallbackHook'``.
        train (bool): Whether to act in training mode.
        eval (bool): Whether to act in evaluation mode.

    Raises:
        ValueError: When a flag is not True or False (:func:`check_flag`),
            or both are false.
    """
    check_flag(call, 'train', train)
    check_flag(call, 'eval', eval)
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

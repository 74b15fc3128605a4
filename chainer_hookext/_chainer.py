"""Training and evaluation modes, read cheaply.

``chainer.config.train`` goes through ``LocalConfig.__getattr__`` and costs
about 400 ns, as much as a whole empty link hook.  :func:`is_train` reads the
same value from the thread-local dictionary that ``chainer.using_config``
writes, falling back to the global configuration, at a fraction of the cost.

The ``train`` / ``eval`` flags that pick them are checked by
:func:`chainer_hookext._checks.check_modes`.
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


def is_recomputing():
    """Returns ``chainer.config.in_recomputing`` (``F.forget``'s backward).
    """
    value = _local.__dict__.get('in_recomputing', _local)
    if value is _local:
        return _global.in_recomputing
    return value

"""Chainer trainer extensions that own link hooks.

Per-link timing, graph release and debugging hooks whose lifetime is exactly
that of ``Trainer.run``.
"""

from chainer_hookext._version import __version__  # NOQA
from chainer_hookext.extensions.link_hook_extension import LinkHookExtension  # NOQA
from chainer_hookext.link_hooks.callback import CallbackHook  # NOQA
from chainer_hookext.link_hooks.scoped_link_hook import ScopedLinkHook  # NOQA


__all__ = [
    '__version__',
    'CallbackHook',
    'LinkHookExtension',
    'ScopedLinkHook',
]

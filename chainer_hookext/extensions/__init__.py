"""Trainer extensions of chainer_hookext."""

from chainer_hookext.extensions.link_hook_extension import LinkHookExtension  # NOQA

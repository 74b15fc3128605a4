"""Trainer extensions of chainer_hookext."""

from chainer_hookext.extensions.link_hook_extension import LinkHookExtension  # NOQA
from chainer_hookext.extensions.unchain_variables import UnchainVariables  # NOQA

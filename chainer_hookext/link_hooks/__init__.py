"""Link hooks of chainer_hookext, usable with or without a trainer."""

from chainer_hookext.link_hooks.callback import CallbackHook  # NOQA
from chainer_hookext.link_hooks.scoped_link_hook import ScopedLinkHook  # NOQA

"""A plain ``chainer.LinkHook`` behind a scope's filter (docs/internals.md,
"Why hooks are registered globally, and filtered")."""

from chainer_hookext import _chainer
from chainer_hookext.link_hooks import scoped_link_hook


class ScopeFilter(scoped_link_hook.ScopedLinkHook):
    """Forwards a plain :class:`chainer.LinkHook`'s calls for the links in
    scope, in the chosen modes (``added`` / ``deleted`` always)."""

    def __init__(self, hook, name):
        self.hook = hook
        self.name = name

    def added(self, link):
        self.hook.added(link)

    def deleted(self, link):
        self.hook.deleted(link)

    # in_scope(), inlined: these run on every link call in the thread.
    def forward_preprocess(self, args):
        names = self.link_names
        if names is None or id(args.link) in names:
            mode = self.config_train
            if mode is None or mode == _chainer.is_train():
                self.hook.forward_preprocess(args)

    def forward_postprocess(self, args):
        names = self.link_names
        if names is None or id(args.link) in names:
            mode = self.config_train
            if mode is None or mode == _chainer.is_train():
                self.hook.forward_postprocess(args)

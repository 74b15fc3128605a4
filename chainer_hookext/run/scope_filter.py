from chainer_hookext import _chainer
from chainer_hookext.link_hooks import scoped_link_hook


class ScopeFilter(scoped_link_hook.ScopedLinkHook):
    """Registers a plain :class:`chainer.LinkHook` for a scope of links.

    Forwards ``forward_preprocess`` / ``forward_postprocess`` to the wrapped
    hook only for links in scope and in the chosen modes, and forwards
    ``added`` / ``deleted`` as they come.  Used by
    :class:`~chainer_hookext.LinkHookExtension` for hooks that are not
    :class:`~chainer_hookext.link_hooks.ScopedLinkHook`.
    """

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

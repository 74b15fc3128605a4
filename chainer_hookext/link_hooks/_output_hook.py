"""Base of the debugging hooks: scoped links' forward outputs, by name."""

from chainer_hookext import _chainer
from chainer_hookext.link_hooks import _active_links
from chainer_hookext.link_hooks import scoped_link_hook


class OutputHook(scoped_link_hook.ScopedLinkHook):
    """Calls :meth:`process` with each scoped link's name after its forward.

    Names come from the scope (:meth:`set_scope`, as
    :class:`~chainer_hookext.LinkHookExtension` sets it: ``main/predictor/l1``)
    or, without a scope, from the stack of running links
    (:class:`~chainer_hookext._active_links.ActiveLinks`: ``MLP/l1``).  The
    stack is kept only when needed: without a scope, or when
    :attr:`track_links` is true (for function-node tagging).  With a scope
    and no tracking, ``forward_preprocess`` does nothing.

    ``train`` / ``eval`` are the hook's own modes; a scope narrows them
    (:class:`~chainer_hookext.link_hooks.ScopedLinkHook`).

    Subclasses implement ``process(name, args)``, where ``args`` is the
    ``forward_postprocess`` argument (``args.out``, ``args.args``,
    ``args.kwargs``, ``args.link``).
    """

    track_links = False

    def __init__(self, train=True, eval=True):
        super().__init__(train=train, eval=eval)
        self.active = _active_links.ActiveLinks()
        self.set_scope(None)

    def set_scope(self, link_names=None, train=True, eval=True):
        super().set_scope(link_names, train=train, eval=eval)
        self._stacked = self.track_links or self.link_names is None
        self.active.reset()

    def forward_preprocess(self, args):
        if not self._stacked:
            return
        link = args.link
        names = self.link_names
        name = None
        if names is not None:
            name = names.get(id(link))
            if name is None:
                return
        mode = self.config_train
        if mode is None or mode == _chainer.is_train():
            self.active.enter(link, name)

    def forward_postprocess(self, args):
        if self._stacked:
            name = self.active.leave(args.link)
            if name is None:
                return
        else:
            name = self.link_names.get(id(args.link))
            if name is None:
                return
            mode = self.config_train
            if mode is not None and mode != _chainer.is_train():
                return
        self.process(name, args)

    def process(self, name, args):
        raise NotImplementedError

"""Base of the debugging hooks: scoped links' forward outputs, by name."""

from chainer_hookext import _chainer
from chainer_hookext import _running_links
from chainer_hookext.link_hooks import scoped_link_hook


class OutputHook(scoped_link_hook.ScopedLinkHook):
    """Calls ``process(name, args)`` after each scoped link's forward.

    Names come from the scope (``main/predictor/l1``) or the thread's
    running links (``MLP/l1``), told of calls without a scope or with
    :attr:`track_links` (to tag the nodes)."""

    track_links = False
    _running = None  # the thread's RunningLinks

    def __init__(self, train=True, eval=True):
        super().__init__(train=train, eval=eval)
        self.set_scope(None)

    def set_scope(self, link_names=None, train=True, eval=True):
        super().set_scope(link_names, train=train, eval=eval)
        self._stacked = self.track_links or self.link_names is None

    def added(self, link):
        super().added(link)
        self._running = _running_links.subscribe(self, self.track_links)

    def deleted(self, link):
        self._running = _running_links.unsubscribe(self._running, self)
        super().deleted(link)

    def forward_preprocess(self, args):
        if self._stacked:
            self._running.enter(args)

    def forward_postprocess(self, args):
        names = self.link_names
        if names is None:
            call = self._running.leave(args)
            if call is None:
                return
            name = call.path
        else:
            if self._stacked:
                self._running.leave(args)
            name = names.get(id(args.link))
            if name is None:
                return
        mode = self.config_train
        if mode is not None and mode != _chainer.is_train():
            return
        self.process(name, args)

    def process(self, name, args):
        raise NotImplementedError

import chainer

from chainer_hookext import _modes


class ScopedLinkHook(chainer.LinkHook):
    """Base class of link hooks that filter links and modes themselves.

    A hook registered globally (``with hook:`` or by
    :class:`~chainer_hookext.LinkHookExtension`) sees every link called in
    the thread.  A :class:`ScopedLinkHook` is told which links are its own and
    in which modes to act through :meth:`set_scope`, and applies the filter
    in its own ``forward_preprocess`` / ``forward_postprocess``, so that
    :class:`~chainer_hookext.LinkHookExtension` registers it directly instead
    of behind a filtering proxy (one Python call less per link call).

    Subclasses read :attr:`link_names` (``None``: every link) and
    :attr:`mode` (``None``: both modes; ``True``: training only; ``False``:
    evaluation only) in their hot path.

    Attributes:
        link_names (dict): ``{id(link): name}`` of the links in scope, or
            ``None`` for every link.
        mode: ``None``, ``True`` or ``False`` as above.
    """

    name = 'ScopedLinkHook'
    link_names = None
    mode = None

    def set_scope(self, link_names=None, train=True, eval=True):
        """Sets the links and modes this hook acts on.

        Args:
            link_names (dict): ``{id(link): name}`` of the links to act on,
                or ``None`` for every link.
            train (bool): Act while ``chainer.config.train`` is true.
            eval (bool): Act while ``chainer.config.train`` is false.
        """
        _modes.check_modes(type(self).__name__ + '.set_scope', train, eval)
        self.link_names = None if link_names is None else dict(link_names)
        self.mode = None if (train and eval) else bool(train)

    def in_scope(self, link):
        """Returns whether ``link`` is in scope in the current mode."""
        names = self.link_names
        if names is not None and id(link) not in names:
            return False
        mode = self.mode
        return mode is None or mode == _modes.is_train()

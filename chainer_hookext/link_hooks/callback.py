from chainer_hookext import _checks
from chainer_hookext.link_hooks import scoped_link_hook


class CallbackHook(scoped_link_hook.ScopedLinkHook):
    """Link hook built from two plain callables.

    For users who want a hook without subclassing :class:`chainer.LinkHook`.
    ``prehook(link, args, kwargs)`` runs before each
    :meth:`Link.forward() <chainer.Link.forward>` and
    ``posthook(link, args, kwargs, out)`` after it, where ``args`` and
    ``kwargs`` are the arguments of the forward call and ``out`` its result.

    A :class:`~chainer_hookext.link_hooks.ScopedLinkHook`:
    :class:`~chainer_hookext.LinkHookExtension` registers it directly and
    scopes it to the model; its ``train`` / ``eval`` then narrow this hook's
    own, never widen them (``CallbackHook(f, eval=False)`` never fires in
    evaluation, whatever the extension's modes).

    Args:
        prehook (callable): Called before each forward, or ``None``.
        posthook (callable): Called after each forward, or ``None``.
            At least one of ``prehook`` and ``posthook`` is required.
        train (bool): Fire while ``chainer.config.train`` is true.
        eval (bool): Fire while ``chainer.config.train`` is false (e.g.
            inside :class:`~chainer.training.extensions.Evaluator`).
        name (str): Name of the hook (a non-empty string); ``None`` keeps
            the class's, ``'CallbackHook'``.

    .. admonition:: Example

        >>> import chainer.links as L
        >>> from chainer_hookext import CallbackHook
        >>> shapes = []
        >>> hook = CallbackHook(
        ...     posthook=lambda link, args, kwargs, out: shapes.append(
        ...         out.shape))
        >>> with hook:
        ...     _ = L.Linear(3, 2)(numpy.zeros((1, 3), numpy.float32))
        >>> shapes
        [(1, 2)]
    """

    name = 'CallbackHook'

    def __init__(self, prehook=None, posthook=None, *, train=True, eval=True,
                 name=None):
        call = type(self).__name__
        if prehook is None and posthook is None:
            raise ValueError(
                '`{}(prehook=None, posthook=None)` has nothing to call: give '
                'prehook(link, args, kwargs), posthook(link, args, kwargs, '
                'out) or both.'.format(call))
        for arg, value in (('prehook', prehook), ('posthook', posthook)):
            if value is not None and not callable(value):
                raise TypeError(
                    '`{}({}={!r})` is not callable: pass a function or '
                    'None.'.format(call, arg, value))
        if name is not None:
            _checks.check_name(call, 'name', name)
        super().__init__(train=train, eval=eval)
        if name is not None:
            self.name = name
        self.prehook = prehook
        self.posthook = posthook

    def forward_preprocess(self, args):
        if self.prehook is not None and self.in_scope(args.link):
            self.prehook(args.link, args.args, args.kwargs)

    def forward_postprocess(self, args):
        if self.posthook is not None and self.in_scope(args.link):
            self.posthook(args.link, args.args, args.kwargs, args.out)

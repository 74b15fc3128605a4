import typing

import numpy

from chainer_hookext import _checks
from chainer_hookext.link_hooks import _output_grads
from chainer_hookext.link_hooks import scoped_link_hook


class CallbackHook(scoped_link_hook.ScopedLinkHook):
    """Link hook built from plain callables.

    For users who want a hook without subclassing :class:`chainer.LinkHook`.
    ``prehook(link, args, kwargs)`` runs before each
    :meth:`Link.forward() <chainer.Link.forward>` and
    ``posthook(link, args, kwargs, out)`` after it, where ``args`` and
    ``kwargs`` are the arguments of the forward call and ``out`` its result.

    ``backward(link, grad_outputs)`` runs in backward, once per call of the
    link whose outputs a backward reached: ``grad_outputs`` is a tuple with
    one gradient (an array) per array of the call's output, in the order of
    the output (a tuple's, a list's, a dict's items'; a single Variable: a
    1-tuple), ``None`` where an output got no gradient (unused downstream,
    not a Variable, or made without a graph).  It runs when the backward
    has stepped every node that created an output; when one is never
    stepped (an output nothing uses), when the next forward starts (the
    next call of a hooked link outside a backward step), or when the hook
    is removed.  Under ``F.forget`` it runs from the recomputation inside
    the backward, once per call of the forward.  A call made without a graph
    (``chainer.no_backprop_mode``) has no backward and no callback.

    With ``grad_inputs=True`` it is called as ``backward(link,
    grad_outputs, grad_inputs=grad_inputs)``, ``grad_inputs`` a tuple with
    one entry per array of the call's positional then keyword arguments,
    after the backward has also stepped the nodes that created them: the
    gradient of the loss w.r.t. that input as Chainer accumulates it (its
    total, through every function that used the input, not only this
    link's: Chainer's hooks see no gradient of one use).  It is ``None`` for
    an input that is a raw array or needs no gradient, and for a Variable
    no function created (the model's input, a leaf, or under ``F.forget``
    the recomputation's copies): Chainer writes its gradient to
    ``x.grad`` after the whole backward, where no hook sees it.

    The callback reads: the gradients are the arrays the backward passes on
    (a read-only view of a NumPy array; a CuPy array as it is). Changing a
    gradient needs a :class:`chainer.FunctionNode` in the forward, whose
    ``backward`` returns the new one.  Statistics and checks of the same
    gradients (``GradientStatisticsHook``, ``NonFiniteHook``) are computed
    before any callback of the step runs.

    A :class:`~chainer_hookext.link_hooks.ScopedLinkHook`:
    :class:`~chainer_hookext.LinkHookExtension` registers it directly and
    scopes it to the model; its ``train`` / ``eval`` then narrow this hook's
    own, never widen them (``CallbackHook(f, eval=False)`` never fires in
    evaluation, whatever the extension's modes).  ``backward`` runs for the
    calls made in scope, in a mode the hook acts in.

    Args:
        prehook (callable): Called before each forward, or ``None``.
        posthook (callable): Called after each forward, or ``None``.
        backward (callable): Called with the gradients of each call, or
            ``None``.  At least one of ``prehook``, ``posthook`` and
            ``backward`` is required.
        grad_inputs (bool): Also give ``backward`` the gradients w.r.t. the
            call's inputs (a keyword argument).
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
        ...         out.shape),
        ...     backward=lambda link, grad_outputs: shapes.append(
        ...         grad_outputs[0].shape))
        >>> with hook:
        ...     y = L.Linear(3, 2)(numpy.zeros((1, 3), numpy.float32))
        ...     F.sum(y).backward()
        >>> shapes
        [(1, 2), (1, 2)]
    """

    name = 'CallbackHook'
    #: Its calls wait for every node (the callback gets them all at once).
    waits = True

    def __init__(self, prehook: typing.Optional[typing.Callable] = None,
                 posthook: typing.Optional[typing.Callable] = None, *,
                 backward: typing.Optional[typing.Callable] = None,
                 grad_inputs: bool = False, train: bool = True,
                 eval: bool = True,
                 name: typing.Optional[str] = None) -> None:
        call = type(self).__name__
        if prehook is None and posthook is None and backward is None:
            raise ValueError(
                f'`{call}(prehook=None, posthook=None, backward=None)` has '
                'nothing to call: give prehook(link, args, kwargs), '
                'posthook(link, args, kwargs, out), backward(link, '
                'grad_outputs) or several.')
        for arg, value in (('prehook', prehook), ('posthook', posthook),
                           ('backward', backward)):
            if value is not None and not callable(value):
                raise TypeError(
                    f'`{call}({arg}={value!r})` is not callable: pass a '
                    'function or None.')
        grad_inputs = _checks.check_flag(call, 'grad_inputs', grad_inputs)
        if grad_inputs and backward is None:
            raise ValueError(
                f'`{call}(grad_inputs=True)` without backward= has nothing '
                'to give them to: pass backward(link, grad_outputs, '
                'grad_inputs), or leave grad_inputs False.')
        if name is not None:
            _checks.check_name(call, 'name', name)
        super().__init__(train=train, eval=eval)
        if name is not None:
            self.name = name
        self.prehook = prehook
        self.posthook = posthook
        self.backward = backward
        self.grad_inputs = grad_inputs
        self._grads = None  # the thread's OutputGrads, while registered

    def added(self, link):
        super().added(link)
        if self.backward is not None:
            self._grads = _output_grads.subscribe(self)

    def deleted(self, link):
        self._grads = _output_grads.unsubscribe(self._grads, self)
        super().deleted(link)

    def forward_preprocess(self, args):
        grads = self._grads
        if grads is not None and grads.started:
            grads.forward_begins()
        if self.prehook is not None and self.in_scope(args.link):
            self.prehook(args.link, args.args, args.kwargs)

    def forward_postprocess(self, args):
        grads = self._grads
        if (self.posthook is None and grads is None) or not self.in_scope(
                args.link):
            return
        if self.posthook is not None:
            self.posthook(args.link, args.args, args.kwargs, args.out)
        if grads is not None:
            grads.mark(self, args.link, None, args.out, (
                args.args, args.kwargs) if self.grad_inputs else None)

    def output_grad(self, call, position, grad):
        """Keeps a gradient for the callback (the tagger calls it)."""
        if isinstance(grad, numpy.ndarray):
            grad = grad.view()
            grad.flags.writeable = False
        return grad

    def call_done(self, call):
        """Calls ``backward`` (the tagger calls it)."""
        if self.grad_inputs:
            self.backward(call.link, call.grad_outputs,
                          grad_inputs=call.grad_inputs)
        else:
            self.backward(call.link, call.grad_outputs)

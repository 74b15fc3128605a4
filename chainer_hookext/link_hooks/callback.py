import typing

import numpy

from chainer_hookext import _checks
from chainer_hookext.link_hooks import _output_grads
from chainer_hookext.link_hooks import scoped_link_hook


class CallbackHook(scoped_link_hook.ScopedLinkHook):
    """Link hook built from plain callables.

    ``prehook(link, args, kwargs)`` runs before each
    :meth:`Link.forward() <chainer.Link.forward>`, ``posthook(link, args,
    kwargs, out)`` after it, and ``backward(link, grad_outputs)`` once per
    call whose outputs a backward reached (a read-only gradient or ``None``
    per output array; docs/debugging.md, "Gradients per link").

    Args:
        prehook (callable): Called before each forward, or ``None``.
        posthook (callable): Called after each forward, or ``None``.
        backward (callable): Called with the gradients of each call, or
            ``None``; one of the three at least.
        grad_inputs (bool): Also give ``backward`` the gradients w.r.t. the
            call's inputs (a keyword argument).
        train (bool): Fire while ``chainer.config.train`` is true.
        eval (bool): Fire while ``chainer.config.train`` is false.
        name (str): Name of the hook; ``None``: ``'CallbackHook'``.

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
    #: The callback gets every node's gradient at once.
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
            self.name = _checks.check_name(call, 'name', name)
        super().__init__(train=train, eval=eval)
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
            grads.mark(self, args.link, args.out, (
                args.args, args.kwargs) if self.grad_inputs else None)

    def output_grad(self, call, position, grad):
        if isinstance(grad, numpy.ndarray):
            grad = grad.view()
            grad.flags.writeable = False
        return grad

    def call_done(self, call):
        if self.grad_inputs:
            self.backward(call.link, call.grad_outputs,
                          grad_inputs=call.grad_inputs)
        else:
            self.backward(call.link, call.grad_outputs)

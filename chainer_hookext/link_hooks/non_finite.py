"""The link hook that names the first link to produce NaN or Inf
(docs/debugging.md, "`NonFiniteGuard`")."""

import collections
import typing
import warnings

import chainer
import numpy

from chainer_hookext import _arrays
from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _running_links
from chainer_hookext.link_hooks import _finite
from chainer_hookext.link_hooks import _output_grads
from chainer_hookext.link_hooks import _output_hook
from chainer_hookext.link_hooks import non_finite_error


_ACTIONS = ('raise', 'warn', 'report')


class NonFiniteHook(_output_hook.OutputHook):
    """Link hook that finds the first link to produce NaN or Inf.

    Checks each hooked link's forward outputs and, with ``backward=True``,
    the gradients w.r.t. the outputs of the nodes made in its forward;
    :meth:`check_grads`, the parameters' (docs/debugging.md,
    "`NonFiniteGuard`").

    Args:
        backward (bool): Also check gradients in backward.
        action (str): ``'raise'`` a :class:`NonFiniteError` at the first
            finding; ``'warn'`` once per place and go on; or ``'report'``
            in :attr:`findings` and :attr:`counts` only.
        deferred (bool): ``None`` (default): NumPy at once, others at
            :meth:`check`.  ``True``: everything at :meth:`check`.
            ``False``: everything at once (synchronises a GPU per call).
        train (bool): Check while ``chainer.config.train`` is true.
        eval (bool): Check while ``chainer.config.train`` is false.

    Attributes:
        findings (list of NonFiniteError): First finding at each place.
        counts (dict): ``{(link, 'out' or 'grad'): non-finite arrays}``
            since :meth:`pop_counts`.
        updater: Whose ``iteration`` findings name, or ``None``.

    .. admonition:: Example

        >>> from chainer_hookext import NonFiniteError, NonFiniteHook
        >>> model = L.Linear(3, 2)
        >>> x = numpy.array([[1, numpy.nan, 0]], numpy.float32)
        >>> try:
        ...     with NonFiniteHook():
        ...         model(x)
        ... except NonFiniteError as e:
        ...     print(e.kind, 'in the', e.phase, 'of', e.link, e.output)
        ...     print(e.hint)
        NaN in the forward of Linear output
        its input args[0] was already non-finite: look before this link
    """

    name = 'NonFiniteHook'

    def __init__(self, *, backward: bool = True, action: str = 'raise',
                 deferred: typing.Optional[bool] = None, train: bool = True,
                 eval: bool = True) -> None:
        call = type(self).__name__
        backward = _checks.check_flag(call, 'backward', backward)
        check_action(call, action)
        deferred = _checks.check_flag(call, 'deferred', deferred,
                                      none='NumPy at once, others at check()')
        self.track_links = backward
        super().__init__(train=train, eval=eval)
        self.backward = backward
        self.action = action
        self.deferred = deferred
        self.updater = None
        self.findings = []
        self.counts = {}
        self._places = set()
        self._pending = []
        self._grads = None  # the thread's OutputGrads, while added

    def added(self, link: typing.Optional[chainer.Link]) -> None:
        super().added(link)
        if self.backward:
            self._grads = _output_grads.subscribe(self, steps=True)

    def deleted(self, link: typing.Optional[chainer.Link]) -> None:
        if self._grads is not None:
            self._grads.prev = None
        self._grads = _output_grads.unsubscribe(self._grads, self)
        super().deleted(link)
        action, self.action = self.action, 'report'
        try:
            late = self.check()
        finally:
            self.action = action
        if late and action != 'report':
            warnings.warn(f'{type(self).__name__}: found when the hook was '
                          f'removed, after the last check(): {late[0]}',
                          RuntimeWarning)

    def grad_step(self, function: chainer.FunctionNode, running: typing.Any,
                  out_grad: tuple, prev: typing.Optional[
                      typing.Callable[[], chainer.FunctionNode]]) -> None:
        """Checks a hooked link's node's output gradients at its step."""
        name = _running_links.name_in(running, self)
        if name is None:
            return
        for i, grad in enumerate(out_grad):
            if grad is not None and grad.dtype.kind == 'f':
                self._check(grad, 'backward', name, (function, i, prev))

    def process(self, name: str, args: typing.Any) -> None:
        for keys, array in _arrays.walk(args.out):
            if array.dtype.kind == 'f':
                self._check(array, 'forward', name, (keys, args))

    def check_grads(self, link: chainer.Link) -> None:
        """Checks the parameters' gradients of ``link`` (~chainer.Link)
        and below (in scope only), between backward and update (clear them
        before backward: Chainer starts them at NaN)."""
        if self.config_train not in (None, _chainer.is_train()):
            return
        names = self.link_names
        root = link.name or type(link).__name__
        seen = set()
        for path, sublink in link.namedlinks():
            if id(sublink) in seen:
                continue
            seen.add(id(sublink))
            if names is None:
                name = root if path == '/' else root + path
            else:
                name = names.get(id(sublink))
                if name is None:
                    continue
            for param_path, param in sublink.namedparams():
                if '/' in param_path[1:]:
                    continue  # a descendant's: checked under its own link
                grad = param.grad
                if grad is not None and grad.dtype.kind == 'f':
                    self._check(grad, 'parameter', name, param_path[1:])

    def check(self) -> typing.List[non_finite_error.NonFiniteError]:
        """Acts on the deferred checks in call order: one host copy.

        Returns:
            list of NonFiniteError: What this call found (with
            ``action='raise'``, it raises the first instead).
        """
        pending, self._pending = self._pending, []
        if self._grads is not None:
            self._grads.prev = None
        return [self._found(int(code), record) for code, (_, record) in zip(
            _arrays.to_host([c for c, _ in pending]), pending) if code]

    def discard(self) -> None:
        """Forgets the deferred checks not read yet."""
        self._pending = []

    def pop_counts(self) -> dict:
        """Returns :attr:`counts` and starts new ones."""
        counts, self.counts = self.counts, {}
        return counts

    def _check(self, array, what, name, detail):
        # detail: (keys, args) 'forward', (function, index, prev)
        # 'backward', the short name 'parameter'.
        if array.size == 0:
            return
        if self.deferred or (self.deferred is None
                             and not isinstance(array, numpy.ndarray)):
            self._pending.append((_finite.code(array),
                                  self._record(what, name, detail)))
            return
        code = int(_finite.code(array))
        if code:
            args = detail[1] if what == 'forward' else None
            self._found(code, self._record(what, name, detail), args)

    def _record(self, what, name, detail):
        train = _chainer.is_train()
        mode = 'training' if train else 'evaluation'
        iteration = None if self.updater is None else (
            self.updater.iteration + (1 if train else 0))
        if what == 'forward':
            output = 'output' + ''.join(f'[{k!r}]' for k in detail[0])
            return _Record(name, iteration, 'forward', output, '', None, mode)
        if what == 'parameter':
            param = name + '/' + detail
            hint = ('checked after backward, before the optimizer\'s update: '
                    'look at the backward of the functions using ' + param)
            return _Record(name, iteration, 'backward',
                           'gradient w.r.t. parameter ' + detail, hint, param,
                           mode)
        function, index, prev = detail
        output = f'gradient w.r.t. output {index} of {function.label}'
        prev = None if prev is None else prev()
        hint = ''
        if prev is not None:
            grads = self._grads
            link = None if grads is None else grads.name_of(self, prev)
            where = ('outside the hooked links' if link is None
                     else f'link {link!r}')
            hint = ('it was computed by the backward of the functions using '
                    f'that output; the previous backward step was '
                    f'{prev.label} ({where})')
        return _Record(name, iteration, 'backward', output, hint, None, mode)

    def _found(self, code, record, args=None):
        # args: a forward finding's checked at once, for its cause (first
        # or raised findings only: it syncs per input and param).
        key = record.link, 'out' if record.phase == 'forward' else 'grad'
        self.counts[key] = self.counts.get(key, 0) + 1
        place = record.link, record.phase, record.output
        first = place not in self._places
        if args is not None and (first or self.action == 'raise'):
            cause = _finite.forward_cause(args)
            record = record._replace(hint=cause.hint, param=None if
                                     cause.param is None else
                                     record.link + '/' + cause.param)
        error = non_finite_error.NonFiniteError(
            record.link, record.iteration, record.phase, record.output,
            _finite.KINDS[code], record.hint, param=record.param,
            mode=record.mode)
        if first:
            self._places.add(place)
            self.findings.append(error)
        if self.action == 'raise':
            raise error
        if self.action == 'warn' and first:
            warnings.warn(str(error), RuntimeWarning)
        return error


# A finding's fields but its kind (see NonFiniteError).
_Record = collections.namedtuple(
    '_Record', 'link iteration phase output hint param mode')


def check_action(call, action):
    return _checks.check_choice(call, 'action', action, _ACTIONS,
                                'an action')

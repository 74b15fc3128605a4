import warnings
import weakref

import numpy

from chainer_hookext import _arrays
from chainer_hookext import _modes
from chainer_hookext.link_hooks import _finite
from chainer_hookext.link_hooks import _node_tags
from chainer_hookext.link_hooks import _output_hook
from chainer_hookext.link_hooks import non_finite_error


_ACTIONS = ('raise', 'warn', 'report')


class NonFiniteHook(_output_hook.OutputHook):
    """Link hook that finds the first link to produce NaN or Inf.

    Checks every floating-point array of each hooked link's forward output
    and, with ``backward=True``, the gradients flowing backward into the
    functions created during a hooked link's forward (a
    :class:`chainer.FunctionHook` tags them with the innermost running
    link).  A finding names the link, the iteration (given :attr:`updater`),
    forward or backward, and which output; ``action`` decides what follows.
    :class:`~chainer_hookext.NonFiniteGuard` owns this hook in a trainer.

    NumPy arrays are checked at once, so a ``NonFiniteError`` is raised from
    the culprit's own call, and a forward finding also says whether the
    link's inputs were already non-finite (the value then comes from code
    between hooked links, e.g. a function called in the parent's forward).
    CuPy arrays are not synchronised per call: each check leaves a
    one-element device flag, and :meth:`check` copies all the flags to the
    host at once and acts on them in call order.  In backward, the gradient
    w.r.t. an output of a tagged function is checked before that function's
    backward runs; the finding names the backward step run just before,
    the likely producer.  Unlike ``chainer.config.debug``, which names a
    function, findings name links.

    The iteration is ``updater.iteration + 1`` for training-mode calls (the
    update in progress) and ``updater.iteration`` for evaluation-mode calls
    (an ``Evaluator`` runs after the update).

    Args:
        backward (bool): Also check gradients in backward.
        action (str): ``'raise'`` a :class:`NonFiniteError` at the first
            finding; ``'warn'`` (a ``RuntimeWarning`` for the first finding
            at each place) and go on; or ``'report'``: only record it in
            :attr:`findings` and :attr:`counts`.
        deferred (bool): ``None`` (default): NumPy at once, others at
            :meth:`check`.  ``True``: everything at :meth:`check`.
            ``False``: everything at once (synchronises a GPU per call).
        train (bool): Check while ``chainer.config.train`` is true.
        eval (bool): Check while ``chainer.config.train`` is false.

    Attributes:
        findings (list of NonFiniteError): First finding at each place.
        counts (dict): ``{(link, 'out' or 'grad'): number of non-finite
            arrays}`` since :meth:`pop_counts`.
        updater: Object whose ``iteration`` names the iteration in findings
            (set by :class:`~chainer_hookext.NonFiniteGuard`), or ``None``.

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

    def __init__(self, *, backward=True, action='raise', deferred=None,
                 train=True, eval=True):
        check_action('NonFiniteHook', action)
        if deferred not in (None, True, False):
            raise ValueError(
                '`NonFiniteHook(deferred={!r})` must be None (NumPy at once, '
                'GPU at check()), True or False.'.format(deferred))
        self.track_links = bool(backward)
        super().__init__(train=train, eval=eval)
        self.backward = bool(backward)
        self.action = action
        self.deferred = deferred
        self.updater = None
        self.findings = []
        self.counts = {}
        self._places = set()
        self._pending = []
        self._grads = None  # the gradient check, while registered

    def added(self, link):
        self.active.reset()
        if not self.backward:
            return
        if self._grads is None:
            self._grads = _node_tags.new_tagger(_GradientCheck, self)
        else:
            self._grads.register()

    def deleted(self, link):
        grads = self._grads
        if grads is not None:
            grads.unregister()
            grads.prev = None
            if not grads.registered:
                self._grads = None
        self.active.reset()
        action, self.action = self.action, 'report'
        try:
            late = self.check()
        finally:
            self.action = action
        if late and action != 'report':
            warnings.warn('NonFiniteHook: found when the hook was removed, '
                          'after the last check(): {}'.format(late[0]),
                          RuntimeWarning)

    def process(self, name, args):
        for keys, array in _arrays.walk(args.out):
            if array.dtype.kind == 'f':
                self._check(array, 'forward', name, (keys, args))

    def check(self):
        """Acts on the deferred checks in call order: one host copy.

        Returns:
            list of NonFiniteError: What this call found (with
            ``action='raise'``, it raises the first instead).
        """
        pending, self._pending = self._pending, []
        if self._grads is not None:
            self._grads.prev = None
        found = []
        for code, record in zip(
                _arrays.to_host([c for c, _ in pending]), pending):
            if code:
                found.append(self._found(int(code), record[1]))
        return found

    def discard(self):
        """Forgets the deferred checks not read yet."""
        self._pending = []

    def pop_counts(self):
        """Returns :attr:`counts` and starts new ones."""
        counts, self.counts = self.counts, {}
        return counts

    def _check(self, array, phase, name, detail):
        if array.size == 0:
            return
        if self.deferred or (self.deferred is None
                             and not isinstance(array, numpy.ndarray)):
            self._pending.append((_finite.code(array),
                                  self._record(phase, name, detail, False)))
            return
        code = int(_finite.code(array))
        if code:
            self._found(code, self._record(phase, name, detail, True))

    def _record(self, phase, name, detail, immediate):
        # (link, iteration, phase, what, hint), made while the call runs.
        updater = self.updater
        iteration = None if updater is None else (
            updater.iteration + (1 if _modes.is_train() else 0))
        if phase == 'forward':
            keys, args = detail
            what = 'output' + ''.join('[{!r}]'.format(k) for k in keys)
            return (name, iteration, phase, what,
                    _finite.input_hint(args) if immediate else '')
        function, index, prev = detail
        what = 'gradient w.r.t. output {} of {}'.format(index, function.label)
        prev = None if prev is None else prev()
        if prev is None:
            return name, iteration, phase, what, ''
        grads = self._grads
        links = (None if grads is None else grads.tag_of(prev)) or ()
        hint = ('it was computed by the backward of the functions using '
                'that output; the previous backward step was {} ({})'.format(
                    prev.label, 'link {!r}'.format(links[-1]) if links
                    else 'outside the hooked links'))
        return name, iteration, phase, what, hint

    def _found(self, code, record):
        name, iteration, phase, what, hint = record
        error = non_finite_error.NonFiniteError(
            name, iteration, phase, what, _finite.KINDS[code], hint)
        key = name, 'out' if phase == 'forward' else 'grad'
        self.counts[key] = self.counts.get(key, 0) + 1
        place = name, phase, what
        first = place not in self._places
        if first:
            self._places.add(place)
            self.findings.append(error)
        if self.action == 'raise':
            raise error
        if self.action == 'warn' and first:
            warnings.warn(str(error), RuntimeWarning)
        return error


class _GradientCheck(_node_tags.NodeTagger):
    # Tags nodes with the running links' names; checks the gradients
    # flowing into tagged nodes.

    def __init__(self, hook):
        super().__init__(hook.name)
        self.hook = hook
        self.prev = None  # weakref to the node of the last backward step

    def forward_preprocess(self, function, in_data):
        names = self.hook.active.names
        if names:
            function._chainer_hookext_tag = names

    def backward_preprocess(self, function, in_data, out_grad):
        prev, self.prev = self.prev, weakref.ref(function)
        links = self.tag_of(function) or ()
        if not links:
            return
        for i, grad in enumerate(out_grad):
            if grad is not None and grad.dtype.kind == 'f':
                self.hook._check(grad, 'backward', links[-1],
                                 (function, i, prev))


def check_action(call, action):
    """Raises ``ValueError`` unless ``action`` is a :class:`NonFiniteHook`
    action; ``call`` names the call in the message."""
    if not (isinstance(action, str) and action in _ACTIONS):
        raise ValueError(
            '`{}(action={!r})` is not an action: use one of {}.'.format(
                call, action, ', '.join(map(repr, _ACTIONS))))

"""GradientStatisticsHook: statistics of the gradients w.r.t. the links'
outputs (docs/debugging.md)."""

from chainer_hookext.link_hooks import _output_grads
from chainer_hookext.link_hooks import _statistics_hook
from chainer_hookext.report import keys as report_keys


STATISTICS = ('mean', 'std', 'min', 'max', 'zero_fraction', 'norm')


class GradientStatisticsHook(_statistics_hook.StatisticsHook):
    """Link hook that accumulates statistics of the gradients w.r.t. the
    links' outputs.

    At the end of each hooked link call the nodes that created its outputs
    are marked; in backward, the step of each such node receives the
    gradient w.r.t. that output (the thread's tagger of link outputs'
    gradients, shared with ``NonFiniteHook`` and
    ``CallbackHook(backward=...)``), and its statistics are added to running
    values, as :class:`~chainer_hookext.ActivationStatisticsHook` adds an
    output's: on the array's device, in float64, about a shift, without
    keeping the array and, on a GPU, without a synchronisation.
    :meth:`statistics` computes, with one device-to-host copy per device,

    * ``mean``, ``std`` (population), ``min``, ``max``, ``zero_fraction``
      of the gradients' elements;
    * ``norm``: the L2 norm of the gradient w.r.t. the output in one call,
      averaged over the calls whose output got a gradient.

    Keys are ``<link>/grad/<statistic>`` for a single output and
    ``<link>/grad/<index or key>/<statistic>`` for each array of a tuple,
    list or dict output (:func:`~chainer_hookext.report.keys.gradient_key`).
    An output no gradient reaches adds nothing; nor does a call made
    without a graph (``chainer.no_backprop_mode``); under ``F.forget`` the
    gradient is seen in the recomputation of the link's call, once per
    call.  :class:`~chainer_hookext.GradientStatistics` owns this hook in a
    trainer.

    Args:
        statistics (tuple of str): Which of :data:`STATISTICS` to return.
        train (bool): Watch calls made while ``chainer.config.train`` is
            true.
        eval (bool): Watch calls made while it is false.
        call (str): The name in errors (an extension's); the class's by
            default.

    .. admonition:: Example

        >>> from chainer_hookext import GradientStatisticsHook
        >>> link = L.Linear(2, 2)
        >>> hook = GradientStatisticsHook(statistics=('mean', 'norm'))
        >>> with hook:
        ...     y = link(numpy.ones((1, 2), numpy.float32))
        ...     F.sum(y * 3).backward()
        >>> hook.statistics()
        {'Linear/grad/mean': 3.0, 'Linear/grad/norm': 4.242640687119285}
    """

    name = 'GradientStatisticsHook'
    STATISTICS = STATISTICS
    report_key = staticmethod(report_keys.gradient_key)
    norm = True

    def __init__(self, *, statistics=STATISTICS, train=True, eval=False,
                 call=None):
        super().__init__(statistics, train, eval, call)
        self._grads = None  # the thread's OutputGrads, while registered

    def added(self, link):
        super().added(link)
        self._grads = _output_grads.subscribe(self)

    def deleted(self, link):
        self._grads = _output_grads.unsubscribe(self._grads, self)
        super().deleted(link)

    def process(self, name, args):
        grads = self._grads
        if grads is not None:
            grads.watch(self.add_grad, name, args.out)

    def add_grad(self, key, grad):
        """Adds the gradient w.r.t. an output to ``key``'s values (the
        tagger calls it, :meth:`~._output_grads.OutputGrads.watch`)."""
        if grad.dtype.kind == 'f' and grad.size:
            self._table.add(key, grad)

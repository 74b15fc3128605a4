"""GradientStatisticsHook: statistics of the gradients w.r.t. the links'
outputs (docs/debugging.md, "Gradients per link")."""

from chainer_hookext.link_hooks import _output_grads
from chainer_hookext.link_hooks import _statistics_hook
from chainer_hookext.report import keys as report_keys


STATISTICS = ('mean', 'std', 'min', 'max', 'zero_fraction', 'norm')


class GradientStatisticsHook(_statistics_hook.StatisticsHook):
    """Link hook that accumulates statistics of the gradients w.r.t. the
    links' outputs.

    As :class:`~chainer_hookext.ActivationStatisticsHook`, with ``norm``
    (per call, averaged), under ``<link>/grad/<statistic>``
    (docs/debugging.md, "Gradients per link").

    Args:
        statistics (tuple of str): Which of :data:`STATISTICS` to return.
        train (bool): Watch calls while ``chainer.config.train`` is true.
        eval (bool): Watch calls while it is false.
        call (str): The name in errors; the class's by default.

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
        self._grads = None

    def added(self, link):
        super().added(link)
        self._grads = _output_grads.subscribe(self)

    def deleted(self, link):
        self._grads = _output_grads.unsubscribe(self._grads, self)
        super().deleted(link)

    def process(self, name, args):
        grads = self._grads
        if grads is not None:
            grads.watch(self, name, args.out)

    def add_grad(self, key, grad):
        if grad.dtype.kind == 'f' and grad.size:
            self._table.add(key, grad)

"""ActivationStatisticsHook: statistics of the links' forward outputs
(docs/debugging.md, "`ActivationStatistics`")."""

from chainer_hookext import _arrays
from chainer_hookext.link_hooks import _statistics_hook
from chainer_hookext.report import keys as report_keys


STATISTICS = ('mean', 'std', 'min', 'max', 'zero_fraction')


class ActivationStatisticsHook(_statistics_hook.StatisticsHook):
    """Link hook that accumulates statistics of the links' forward outputs.

    Floating-point outputs add to running sums on their device;
    :meth:`statistics` returns them under ``<link>/out/<statistic>``
    (docs/debugging.md, "`ActivationStatistics`").

    Args:
        statistics (tuple of str): Which of :data:`STATISTICS` to return.
        train (bool): Accumulate while ``chainer.config.train`` is true.
        eval (bool): Accumulate while it is false.
        call (str): The name in errors; the class's by default.

    .. admonition:: Example

        >>> from chainer_hookext import ActivationStatisticsHook
        >>> hook = ActivationStatisticsHook(statistics=('mean', 'max'))
        >>> with hook:
        ...     _ = L.Linear(2, 1, initialW=1)(
        ...         numpy.array([[1, 2], [3, 4]], numpy.float32))
        >>> hook.statistics()
        {'Linear/out/mean': 5.0, 'Linear/out/max': 7.0}
    """

    name = 'ActivationStatisticsHook'
    STATISTICS = STATISTICS
    report_key = staticmethod(report_keys.activation_key)

    def __init__(self, *, statistics=STATISTICS, train=True, eval=False,
                 call=None):
        super().__init__(statistics, train, eval, call)

    def process(self, name, args):
        for keys, array in _arrays.walk(args.out):
            if array.dtype.kind != 'f' or array.size == 0:
                continue
            self._table.add((name, keys), array)

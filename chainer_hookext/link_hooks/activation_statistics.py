"""ActivationStatisticsHook: statistics of the links' forward outputs
(docs/debugging.md)."""

from chainer_hookext import _arrays
from chainer_hookext.link_hooks import _statistics_hook
from chainer_hookext.report import keys as report_keys


STATISTICS = ('mean', 'std', 'min', 'max', 'zero_fraction')


class ActivationStatisticsHook(_statistics_hook.StatisticsHook):
    """Link hook that accumulates statistics of the links' forward outputs.

    For each floating-point array of each hooked link's output it computes,
    on the array's device and in float64, the sum and the sum of squares of
    the values less a shift (the mean of the first output of that key since
    :meth:`reset`, so that the variance's subtraction loses nothing when the
    mean is large beside the spread), the minimum, the maximum and the
    number of zeros, and adds them to running values, without keeping the
    array.  For CuPy arrays the running values stay on the device (no
    synchronisation per call: one kernel launch per array); for NumPy they
    are Python floats.
    :meth:`statistics` computes, with one device-to-host copy per device,

    * ``mean``, ``std`` (population), ``min``, ``max``;
    * ``zero_fraction``: fraction of elements exactly zero (dead ReLUs).

    Keys are ``<link>/out/<statistic>`` for a single output, and
    ``<link>/out/<index or key>/<statistic>`` for each array of a tuple, list
    or dict output.  :class:`~chainer_hookext.ActivationStatistics` owns this
    hook in a trainer and names links ``main/predictor/l1``; without a trainer
    links are named after their parents (``MLP/l1``).

    Args:
        statistics (tuple of str): Which of :data:`STATISTICS` to return.
        train (bool): Accumulate while ``chainer.config.train`` is true.
        eval (bool): Accumulate while ``chainer.config.train`` is false.
        call (str): The name in errors (an extension's); the class's by
            default.

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

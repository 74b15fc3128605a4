"""ActivationStatistics: statistics of the links' outputs, in a trainer
(docs/debugging.md, "`ActivationStatistics`")."""

from chainer_hookext import _checks
from chainer_hookext.extensions import _statistics
from chainer_hookext.link_hooks import activation_statistics


class ActivationStatistics(_statistics.StatisticsExtension):
    """Trainer extension that reports statistics of the links' outputs.

    At the trigger it reports the statistics of every output since the last
    report as ``<link>/out/<statistic>`` (docs/debugging.md,
    "`ActivationStatistics`").

    Args:
        links (~chainer.Link or list of ~chainer.Link): Sub-trees to watch;
            ``None`` watches the ``main`` optimizer's target.
        statistics (tuple of str): Which of ``'mean'``, ``'std'``, ``'min'``,
            ``'max'`` and ``'zero_fraction'`` to report (all by default).
        train (bool): Count training-mode calls.
        eval (bool): Count evaluation-mode calls (e.g. in ``Evaluator``).

    .. admonition:: Example

        >>> from chainer_hookext import ActivationStatistics
        >>> trainer.extend(ActivationStatistics(), trigger=(1, 'epoch'))
        >>> trainer.extend(extensions.LogReport())
    """

    default_name = 'activation_statistics'

    def __init__(self, links=None, *,
                 statistics=activation_statistics.STATISTICS, train=True,
                 eval=False):
        call = type(self).__name__
        train, eval = _checks.check_modes(call, train, eval)
        hook = activation_statistics.ActivationStatisticsHook(
            statistics=statistics, train=train, eval=eval, call=call)
        super().__init__(hook, links, train=train, eval=eval)

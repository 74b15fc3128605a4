"""GradientStatistics: statistics of the gradients w.r.t. the links'
outputs, in a trainer (docs/debugging.md, "Gradients per link")."""

from chainer_hookext.extensions import _statistics
from chainer_hookext.link_hooks import gradient_statistics


class GradientStatistics(_statistics.StatisticsExtension):
    """Trainer extension that reports statistics of the gradients w.r.t.
    the links' outputs.

    At the trigger it reports the statistics of the training iterations'
    gradients as ``<link>/grad/<statistic>`` (docs/debugging.md, "Gradients
    per link").

    Args:
        links (~chainer.Link or list of ~chainer.Link): Sub-trees to watch;
            ``None`` watches the ``main`` optimizer's target.
        statistics (tuple of str): Which of ``'mean'``, ``'std'``, ``'min'``,
            ``'max'``, ``'zero_fraction'`` and ``'norm'`` to report (all by
            default).

    .. admonition:: Example

        >>> from chainer_hookext import GradientStatistics
        >>> trainer.extend(GradientStatistics(), trigger=(1, 'epoch'))
        >>> trainer.extend(extensions.LogReport())
    """

    default_name = 'gradient_statistics'

    def __init__(self, links=None, *,
                 statistics=gradient_statistics.STATISTICS):
        call = type(self).__name__
        hook = gradient_statistics.GradientStatisticsHook(
            statistics=statistics, train=True, eval=False, call=call)
        super().__init__(hook, links, train=True, eval=False)

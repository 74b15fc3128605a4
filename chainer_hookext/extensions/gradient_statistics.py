"""GradientStatistics: statistics of the gradients w.r.t. the links'
outputs, in a trainer (docs/debugging.md)."""

from chainer_hookext.extensions import _statistics
from chainer_hookext.link_hooks import gradient_statistics


class GradientStatistics(_statistics.StatisticsExtension):
    """Trainer extension that reports statistics of the gradients w.r.t.
    the links' outputs.

    Owns a :class:`~chainer_hookext.link_hooks.GradientStatisticsHook` for
    the length of training: in each training iteration's backward, the
    gradient w.r.t. each output of each call of the hooked links adds to
    running sums on its device (nothing is kept alive, nothing is copied to
    the host per call).  At the trigger (each epoch by default) the mean,
    standard deviation, minimum, maximum and fraction of zeros of the
    gradients' elements, and ``norm``, the L2 norm of one call's gradient
    averaged over the calls, are reported under
    ``<link>/grad/<statistic>`` (``main/predictor/l1/grad/norm``), then the
    sums start again.  The keys are apart from
    :class:`~chainer_hookext.NonFiniteGuard`'s ``<link>/grad/non_finite``.
    Training iterations only: evaluation runs no backward.

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

"""What the statistics extensions share: reporting a hook's statistics."""

from chainer import reporter
from chainer.training import extension

from chainer_hookext.run import link_hook_extension


class StatisticsExtension(link_hook_extension.LinkHookExtension):
    """Base of :class:`~chainer_hookext.ActivationStatistics` and
    :class:`~chainer_hookext.GradientStatistics`: at each trigger, reports
    what its hook accumulated (``hook.statistics()``) and starts again
    (``hook.reset()``), as it does when training starts and ends."""

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_WRITER

    def initialize(self, trainer):
        super().initialize(trainer)
        self.hook.reset()

    def __call__(self, trainer):
        values = self.hook.statistics()
        self.hook.reset()
        if values:
            reporter.report(values)

    def finalize(self):
        super().finalize()
        self.hook.reset()

"""What the statistics extensions share: reporting a hook's statistics."""

from chainer import reporter
from chainer.training import extension

from chainer_hookext.run import link_hook_extension


class StatisticsExtension(link_hook_extension.LinkHookExtension):
    """Reports ``hook.statistics()`` at each trigger, then ``hook.reset()``
    (also when training starts and ends)."""

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

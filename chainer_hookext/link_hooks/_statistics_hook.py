"""Base of the hooks that keep running statistics of arrays, by key."""

from chainer_hookext.link_hooks import _output_hook
from chainer_hookext.link_hooks import _running_statistics


class StatisticsHook(_output_hook.OutputHook):
    """An OutputHook adding arrays to a :class:`~._running_statistics.Table`
    with ``self._table.add((name, output), array)``; subclasses set
    ``STATISTICS``, ``report_key(name, output, statistic)`` and ``norm``."""

    STATISTICS = ()
    norm = False
    report_key = None

    def __init__(self, statistics, train, eval, call=None):
        self.statistics_names = names = _running_statistics.check_statistics(
            call or type(self).__name__, statistics, self.STATISTICS)
        super().__init__(train=train, eval=eval)
        self._table = _running_statistics.Table(
            names, type(self).report_key, norm=self.norm and 'norm' in names)

    def statistics(self) -> dict:
        """Returns ``{key: float}`` since :meth:`reset`."""
        return self._table.values()

    def reset(self) -> None:
        """Forgets what was accumulated."""
        self._table.reset()

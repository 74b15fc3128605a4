"""The recent seconds of each part of the loop's iterations, for
``Timeline``'s outlier traces (docs/timing.md, "Outlier traces").
"""

import collections

from chainer_hookext import _state
from chainer_hookext.timing import phases
from chainer_hookext.timing import running_median

UPDATE = 'update'


class PartHistory:
    """The last ``size`` runs of the update and of each extension, by
    set of extensions called together (the last ``sets`` seen):
    ``extensions`` is ``{frozenset of phases: {phase: RunningMedian}}``.

    .. admonition:: Example

        >>> history = PartHistory(50, 32)
        >>> evaluator = phases.ExtensionPhase('validation')
        >>> runs = history.runs(frozenset([evaluator]))
        >>> history.add(0.010, {evaluator: 0.040}, runs)
        >>> history.update.median(), runs[evaluator].median()
        (0.01, 0.04)
    """

    def __init__(self, size: int, sets: int):
        self.size = size
        self.sets = sets
        self.update = running_median.RunningMedian(size)
        self.extensions = collections.OrderedDict()

    def runs(self, called: frozenset) -> dict:
        """Returns ``{phase: RunningMedian}`` of the iterations calling
        ``called``."""
        extensions = self.extensions
        runs = extensions.get(called)
        if runs is None:
            runs = extensions[called] = {}
            if len(extensions) > self.sets:
                extensions.popitem(last=False)
        else:
            extensions.move_to_end(called)
        return runs

    def add(self, update: float, called: dict, runs: dict) -> None:
        """Adds an iteration; ``called``: ``{phase: seconds}``."""
        self.update.add(update)
        for phase, seconds in called.items():
            self._add_run(runs, phase, seconds)

    def _add_run(self, runs, phase, seconds):
        if phase not in runs:
            runs[phase] = running_median.RunningMedian(self.size)
        runs[phase].add(seconds)

    def save(self, serializer):
        """Saves a row per run: its part, those called beside it."""
        labels = [[UPDATE, None]] * len(self.update)
        seconds = self.update.values()
        for called, runs in self.extensions.items():
            beside = sorted(phase.name for phase in called)
            for phase, history in runs.items():
                values = history.values()
                labels += [[phase.name, beside]] * len(values)
                seconds += values
        _state.save_rows(serializer, labels, {'seconds': seconds})

    def load(self, serializer):
        """Adds the runs :meth:`save` saved (raises ``MissingState``)."""
        for (name, beside), value in _state.load_rows(
                serializer, ('seconds',)):
            if beside is None:
                self.update.add(value['seconds'])
                continue
            called = frozenset(phases.ExtensionPhase(n) for n in beside)
            self._add_run(self.runs(called), phases.ExtensionPhase(name),
                          value['seconds'])

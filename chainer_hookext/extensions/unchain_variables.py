"""The trainer extension releasing reported graphs, last (docs/unchain.md)."""

import chainerx
from chainer import configuration
from chainer import variable
from chainer.training import extension

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _state
from chainer_hookext.run import priorities
from chainer_hookext.run import training_loop


class UnchainVariables(extension.Extension):
    """Trainer extension that releases the graphs of reported Variables.

    With ``chainer.config.keep_graph_on_report`` on, it unchains every
    Variable of ``trainer.observation`` after every other extension
    (docs/unchain.md).  Pass no ``trigger=`` to ``trainer.extend``.

    Args:
        always (bool): Unchain every iteration, whatever the flag.

    .. admonition:: Example

        >>> from chainer.training import extensions
        >>> from chainer_hookext import unchain_variables
        >>> trainer.extend(extensions.DumpGraph('main/loss'))
        >>> trainer.extend(unchain_variables())
    """

    priority = priorities.PRIORITY_LAST
    default_name = 'UnchainVariables'

    def __init__(self, *, always: bool = False) -> None:
        self.always = _checks.check_flag('UnchainVariables', 'always', always)
        self._flag_at_update_start = False
        self._entry = None

    def initialize(self, trainer):
        self._leave_loop()
        self._entry = training_loop.TrainingLoop.install(
            trainer, self._enter_loop)

    def _enter_loop(self):
        self._entry = None
        if configuration.config.keep_graph_on_report:
            self._flag_at_update_start = True

    def trigger(self, trainer):
        """Whether this iteration's observation may hold graphs:
        ``keep_graph_on_report`` was on during the update or is on now, or
        ``always`` is set."""
        # Not chainer.config's LocalConfig.__getattr__ (about 500 ns).
        flag = _chainer.keeps_graph_on_report()
        due = self._flag_at_update_start or flag or self.always
        self._flag_at_update_start = flag
        return bool(due)

    def __call__(self, trainer):
        """Unchains the Variables of ``trainer.observation``, nested too."""
        unchain_nested(trainer.observation)

    def on_error(self, trainer, exc, tb):
        self._leave_loop()

    def finalize(self):
        self._leave_loop()
        self._flag_at_update_start = False

    def serialize(self, serializer):
        """Saves or restores the flag carried into the next update."""
        if not _state.is_loading(serializer):
            serializer('carried_flag',
                       bool(configuration.config.keep_graph_on_report))
            return
        try:
            value = _state.read(serializer, 'carried_flag')
        except _state.MissingState as e:
            _state.warn_missing(
                self.name or self.default_name, e,
                'It follows keep_graph_on_report from the loop\'s start.')
            value = False
        self._flag_at_update_start = bool(value)

    def _leave_loop(self):
        entry, self._entry = self._entry, None
        if entry is not None:
            entry.discard(self._enter_loop)


#: Alias of :class:`UnchainVariables`, named as Chainer's.
unchain_variables = UnchainVariables


def unchain_nested(value):
    """Unchains the Variables in ``value`` and its lists, tuples and dicts;
    returns how many (ChainerX ones excluded)."""
    count, stack, seen = 0, [value], set()
    while stack:
        value = stack.pop()
        is_variable = isinstance(value, variable.Variable)
        if not (is_variable or isinstance(value, (dict, list, tuple))) or (
                id(value) in seen):
            continue
        seen.add(id(value))
        if not is_variable:
            stack.extend(value.values() if isinstance(value, dict) else value)
        elif value.xp is not chainerx:
            value.unchain_backward()
            count += 1
    return count

import chainerx
from chainer import configuration
from chainer import variable
from chainer.training import extension

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _state
from chainer_hookext.run import priorities
from chainer_hookext.run import training_loop


# ``chainer.config.keep_graph_on_report`` costs about 500 ns through
# ``LocalConfig.__getattr__``; the trigger reads the thread's value (set by
# ``chainer.using_config`` or by assignment) and falls back to the global one,
# as ``_chainer.is_train`` does.


class UnchainVariables(extension.Extension):
    """Trainer extension that releases the graphs of reported Variables.

    When ``chainer.config.keep_graph_on_report`` is on, ``chainer.report``
    stores Variables with their whole computational graph: every activation
    of the forward pass stays alive as long as anything holds a reported
    value.  This extension calls
    :meth:`~chainer.Variable.unchain_backward` on every Variable of
    ``trainer.observation`` at the end of each iteration in which that could
    have happened, after every other extension has read them.

    Compared with Chainer's
    :class:`~chainer.training.extensions.unchain_variables`:

    * It runs last: its priority is
      :data:`~chainer_hookext.PRIORITY_LAST`, below ``snapshot`` (-100) and
      any extension given a negative priority by hand (Chainer's runs at 0).
      ``trainer.extend(..., priority=...)`` still overrides it.
    * It reaches Variables nested in the observation's lists, tuples and
      dicts (e.g. ``chainer.report({'losses': {'ce': loss}}, self)``), not
      only top-level values.
    * ``serialize`` keeps its state, so a resumed run unchains in the same
      iterations as an uninterrupted one.

    How the flag is followed, step by step:

    1. When ``Trainer.run`` enters its loop (its first call of the stop
       trigger, after every ``initialize``, e.g. ``DumpGraph``'s, which
       turns the flag on, and after the extensions called before training),
       it reads the flag: the value in effect during the first update.  A
       value restored by ``serialize`` is kept as well.
    2. At the end of each iteration (its ``trigger``), it unchains when the
       flag was on during the update (the value carried from the end of the
       previous iteration) or is on now, during this iteration's extensions
       (``DumpGraph`` turns it off after its first call: that iteration is
       still unchained).  It then carries the current value to the next
       iteration.
    3. When the flag was off throughout, the trigger returns ``False``: about
       0.2 us per iteration, nothing else (see ``benchmarks/``).

    The data of the Variables is never touched (``LogReport`` and the like
    still read the values), and unchaining an already unchained Variable does
    nothing.  ChainerX Variables, which cannot be unchained, are left as they
    are.

    .. note::
       The trigger is the extension's own method: do not pass ``trigger=`` to
       ``trainer.extend``, or the flag would no longer be followed.

    .. note::
       With the flag off, Chainer's reporter copies *top-level* Variables
       without their graph but stores lists, tuples and dicts as they are: a
       Variable nested in them keeps its graph even then.  If the model
       reports such values, use ``always=True``.  The same holds for an
       extension that turns the flag on only within a
       ``chainer.using_config`` block, which no check at the ends of the
       iteration can see.

    Args:
        always (bool): Unchain every iteration, whatever the flag.  Costs a
            walk through the observation each iteration.

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
        """Tells whether this iteration's observation may hold graphs.

        Args:
            trainer (~chainer.training.Trainer): The trainer.

        Returns:
            bool: ``True`` when ``keep_graph_on_report`` was on during the
            update or is on now, or when ``always`` is set.
        """
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
        """Saves or restores the flag carried into the next update.

        Saving records ``keep_graph_on_report`` as it stands: ``snapshot``
        runs after every extension but this one, so that is the value carried
        from the snapshot's iteration into the next update.  Loading a
        snapshot taken before this extension was added warns and starts
        afresh: the flag read when the loop starts applies.
        """
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


#: Alias of :class:`UnchainVariables`, so that
#: ``trainer.extend(unchain_variables())`` reads like Chainer's.
unchain_variables = UnchainVariables


def unchain_nested(value):
    """Unchains the Variables in ``value`` and its lists, tuples and dicts.

    Each container and Variable is visited once, so cycles are harmless.

    Args:
        value: A Variable, or a list, tuple or dict (e.g. an observation);
            anything else is ignored.

    Returns:
        int: The number of Variables unchained (ChainerX ones excluded).
    """
    count = 0
    stack = [value]
    seen = set()
    while stack:
        value = stack.pop()
        is_variable = isinstance(value, variable.Variable)
        if not (is_variable or isinstance(value, (dict, list, tuple))):
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        if not is_variable:
            stack.extend(value.values() if isinstance(value, dict) else value)
        elif value.xp is not chainerx:
            value.unchain_backward()
            count += 1
    return count

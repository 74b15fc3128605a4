"""Which iterations of a training run are traced, and which are measured
(docs/timing.md): a window wins, then a ``LinkMemory`` measurement, then an
outlier trace, whatever the order of the extensions.
"""

import collections
import weakref

#: Iterations ``first`` to ``last`` (both included) that a window traces.
Traced = collections.namedtuple('Traced', ('first', 'last'))

# {trainer: IterationPlan}, for as long as the trainer lives.
_plans = weakref.WeakKeyDictionary()


class IterationPlan:
    """The traced and the measured iterations of one trainer's run (use
    :meth:`of`).

    .. admonition:: Example

        >>> plan = IterationPlan()
        >>> plan.trace('Timeline', 4, 6)
        >>> [plan.measure(n) for n in (3, 4, 5, 6, 7, 8)]
        [True, False, False, False, False, True]
        >>> plan.measured(8), plan.traced(8)
        (True, False)
    """

    REMEMBERED = 8  # measured iterations (an outlier asks about two)

    def __init__(self):
        self._traced = {}  # {owner: Traced}
        self._measured = collections.deque(maxlen=self.REMEMBERED)

    @classmethod
    def of(cls, trainer) -> 'IterationPlan':
        """``trainer``'s plan (made at the first call)."""
        plan = _plans.get(trainer)
        if plan is None:  # not setdefault: no plan made to be thrown away
            plan = _plans[trainer] = cls()
        return plan

    def trace(self, owner, first: int, last: int) -> None:
        """``owner`` traces iterations ``first`` to ``last`` from now."""
        if not (isinstance(first, int) and isinstance(last, int)
                and 1 <= first <= last):
            raise ValueError(
                f'`IterationPlan.trace(owner, first={first!r}, '
                f'last={last!r})`: give iteration numbers from 1, '
                f'first <= last.')
        self._traced[owner] = Traced(first, last)

    def forget(self, owner) -> None:
        """Forgets what ``owner`` traces, if anything."""
        self._traced.pop(owner, None)

    def traced(self, number: int) -> bool:
        """Whether a window traces iteration ``number``."""
        return any(t.first <= number <= t.last
                   for t in self._traced.values())

    def measure(self, number: int) -> bool:
        """Whether iteration ``number`` may be measured (then remembered):
        not when a window traces it or the one before (the set-up may run
        in the end of ``number - 1``)."""
        if self.traced(number) or self.traced(number - 1):
            return False
        self._measured.append(number)
        return True

    def measured(self, number: int) -> bool:
        """Whether iteration ``number`` was measured (of the last few)."""
        return number in self._measured

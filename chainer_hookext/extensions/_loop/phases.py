"""Exclusive time per phase of a training iteration.

A :class:`PhaseClock` keeps a stack of running phases.  Each transition
(:meth:`~PhaseClock.enter`, :meth:`~PhaseClock.leave`,
:meth:`~PhaseClock.begin`) reads the clock once and charges the time since
the last transition to the phase on top, so a phase nested in another
(the loss function's forward inside ``optimizer.update``) is not charged to
both, and the phases of an iteration add up to the whole of it.  The bottom
of the stack is the phase of the loop itself: ``other`` during the update,
``extension/<name>`` while an extension's trigger and call run.
"""

import collections
import time


# Bound once: the hot path pays no module attribute lookup.  Tests replace
# it with a fake clock.
_perf_counter = time.perf_counter

DATA = 'data'
FORWARD = 'forward'
BACKWARD = 'backward'
OPTIMIZER = 'optimizer'
ALLREDUCE = 'allreduce'
OTHER = 'other'
#: Phases of the update, in report order.
UPDATE_PHASES = (DATA, FORWARD, BACKWARD, OPTIMIZER, ALLREDUCE)
#: Prefix of an extension's phase: ``extension/<name in the trainer>``.
EXTENSION = 'extension/'

#: One run of a phase, recorded while :attr:`PhaseClock.spans` is a list:
#: clock times in seconds; ``depth`` 0 for the bottom of the stack.
Span = collections.namedtuple('Span', ('name', 'start', 'end', 'depth'))


class PhaseClock(object):
    """Seconds per phase, charged to the innermost running phase.

    Attributes:
        totals (dict): ``{phase: seconds}`` since the clock was made.
        in_update (bool): Whether the update is running (between an
            iteration's start and its first extension): the update's
            phases count only then.
        spans (list): ``None``, or a list to which each ended phase is
            appended as a :class:`Span` (a :class:`~chainer_hookext.Timeline`
            window sets it).
        base_span (bool): Whether the bottom phase makes a span when it
            ends; false for an extension whose trigger said no.
    """

    def __init__(self):
        self.totals = {}
        self.in_update = False
        self.spans = None
        self._stack = [OTHER]
        self._starts = [None]  # when each phase of the stack started
        self.base_span = True
        self._mark = None  # the last transition's time; None: not started

    def begin(self, base, in_update):
        """Starts a new part of the loop: ``base`` at the bottom.

        Called at each iteration's start (``other``, in the update) and at
        each extension's trigger (``extension/<name>``).  Phases left open
        by an exception are dropped.  It runs once per extension per
        iteration: the stack is reused, the charge inlined.
        """
        t = _perf_counter()
        mark = self._mark
        stack = self._stack
        if mark is not None:
            top = stack[-1]
            totals = self.totals
            totals[top] = totals.get(top, 0.0) + (t - mark)
            if self.spans is not None:
                self._end_all(t)
        self._mark = t
        del stack[1:]
        stack[0] = base
        starts = self._starts
        del starts[1:]
        starts[0] = t
        self.base_span = True
        self.in_update = in_update

    def enter(self, phase):
        """Starts ``phase`` inside the running one."""
        # _charge inlined: enter and leave run a few times per iteration.
        t = _perf_counter()
        mark = self._mark
        if mark is not None:
            top = self._stack[-1]
            totals = self.totals
            totals[top] = totals.get(top, 0.0) + (t - mark)
        self._mark = t
        self._stack.append(phase)
        self._starts.append(t)

    def leave(self):
        """Ends the innermost phase."""
        t = _perf_counter()
        mark = self._mark
        if mark is not None:
            top = self._stack[-1]
            totals = self.totals
            totals[top] = totals.get(top, 0.0) + (t - mark)
        self._mark = t
        if len(self._stack) > 1:
            phase = self._stack.pop()
            start = self._starts.pop()
            # A phase inside the same phase (the loss function's forward
            # calling the target's) is one span: the outer one.
            if self.spans is not None and self._stack[-1] != phase:
                self.spans.append(Span(phase, start, t, len(self._stack)))

    def stop(self):
        """Charges the time so far and stops until the next :meth:`begin`."""
        if self._mark is not None:
            t = _perf_counter()
            self._charge(t)
            self._end_all(t)
        self._mark = None
        self.in_update = False

    def now(self):
        """Returns the clock's time in seconds."""
        return _perf_counter()

    def read(self):
        """Returns :attr:`totals` with the running phase charged up to now.
        """
        if self._mark is not None:
            t = _perf_counter()
            self._charge(t)
            self._mark = t
        return dict(self.totals)

    def _end_all(self, t):
        # Records the end of every running phase, innermost first.
        if self.spans is None:
            return
        for depth in range(len(self._stack) - 1, -1, -1):
            if depth == 0 and not self.base_span:
                break
            self.spans.append(Span(
                self._stack[depth], self._starts[depth], t, depth))

    def _charge(self, t):
        phase = self._stack[-1]
        self.totals[phase] = self.totals.get(phase, 0.0) + (t - self._mark)

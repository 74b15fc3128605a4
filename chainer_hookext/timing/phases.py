"""Time per phase of a training iteration, phase after phase.

A :class:`PhaseClock` runs one phase at a time.  Each
:meth:`~PhaseClock.switch` reads the clock once and charges the time since
the last switch to the phase that was running, so the phases of an
iteration add up to the whole of it.  What starts each phase is in
:mod:`.marks`.
"""

import collections

from chainer_hookext.timing import clock

DATA = 'data'
FORWARD = 'forward'
BACKWARD = 'backward'
OPTIMIZER = 'optimizer'
ALLREDUCE = 'allreduce'
OTHER = 'other'
#: Phases of the update, in report order.
UPDATE_PHASES = (DATA, FORWARD, BACKWARD, OPTIMIZER, ALLREDUCE)

#: The phase of one of the trainer's extensions (its trigger and call):
#: ``name`` is its name in the trainer.
ExtensionPhase = collections.namedtuple('ExtensionPhase', ('name',))

#: One run of a phase (a name above, or an :class:`ExtensionPhase`):
#: clock times in seconds.
Span = collections.namedtuple('Span', ('phase', 'start', 'end'))


class PhaseClock(object):
    """Seconds per phase, charged to the running phase.

    Attributes:
        totals (dict): ``{phase: seconds}`` since the clock was made.
        phase: The running phase (see :class:`Span`); ``None`` before
            the first :meth:`switch` and after :meth:`stop`.
        started (float): When the running phase started.
        span_lists (list): Lists to which each ended phase is appended as
            a :class:`Span` (a :class:`~chainer_hookext.Timeline` window
            adds one).
    """

    def __init__(self):
        self.totals = {}
        self.phase = None
        self.started = None
        self.span_lists = []
        self._mark = None  # the last charge's time
        self._span = True  # whether the running phase makes a span

    def switch(self, phase, t=None):
        """Ends the running phase and starts ``phase``, at ``t`` or now.

        Switching to the running phase changes nothing.
        """
        if phase == self.phase:
            return
        if t is None:
            t = clock.now()
        running = self.phase
        if running is not None:
            totals = self.totals
            totals[running] = totals.get(running, 0.0) + (t - self._mark)
            if self.span_lists and self._span:
                self._add_span(t)
        self.phase = phase
        self.started = self._mark = t
        self._span = True

    def no_span(self):
        """Makes no span of the running phase (an extension not called)."""
        self._span = False

    def cut(self):
        """Adds the running phase's span up to now; it goes on after."""
        t = clock.now()
        if self.phase is not None and self._span and t > self.started:
            self._add_span(t)
            self.started = t
        return t

    def stop(self):
        """Ends the running phase; nothing runs until the next switch."""
        self.switch(None)

    def now(self):
        """Returns the clock's time in seconds."""
        return clock.now()

    def read(self):
        """Returns :attr:`totals` with the running phase charged up to now.
        """
        if self.phase is not None:
            t = clock.now()
            totals = self.totals
            totals[self.phase] = totals.get(self.phase, 0.0) + (
                t - self._mark)
            self._mark = t
        return dict(self.totals)

    def _add_span(self, t):
        span = Span(self.phase, self.started, t)
        for spans in self.span_lists:
            spans.append(span)

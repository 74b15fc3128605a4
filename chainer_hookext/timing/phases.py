"""Time per phase of an iteration, the garbage collector's apart, and the
tail of an interval's iterations (docs/timing.md, "`TimedLoop`: where each
iteration goes")."""

import collections
import random

import numpy

from chainer_hookext import _state
from chainer_hookext.timing import clock
from chainer_hookext.timing import pauses

DATA = 'data'
FORWARD = 'forward'
BACKWARD = 'backward'
OPTIMIZER = 'optimizer'
ALLREDUCE = 'allreduce'
OTHER = 'other'
#: Phases of the update, in report order.
UPDATE_PHASES = (DATA, FORWARD, BACKWARD, OPTIMIZER, ALLREDUCE)

#: An extension's phase (its trigger and call), by its name in the trainer.
ExtensionPhase = collections.namedtuple('ExtensionPhase', ('name',))

#: One run of a phase (a name above, or an :class:`ExtensionPhase`).
Span = collections.namedtuple('Span', ('phase', 'start', 'end'))

#: One garbage collection (``generation``, ``collected``: gc's info).
GcSpan = collections.namedtuple(
    'GcSpan', ('generation', 'collected', 'start', 'end'))

# A namedtuple made with no Python frame (its __new__ is one): per phase.
_new_tuple = tuple.__new__

# The last collections in PhaseClock.gc that a pause may take back.
_GC_RECENT = 8


class PhaseClock:
    """Seconds per phase, charged to the running phase; ``gc``: seconds in
    the garbage collector but in an extension's phase or a pause; the
    ``*_lists``: ``Timeline`` lists taking each ended span."""

    def __init__(self):
        self.totals = {}
        self.phase = self.started = None
        self.span_lists, self.gc_lists, self.pause_lists = [], [], []
        self._mark = None  # the last charge's time
        self.makes_span = True
        self.gc = 0.0
        self._gc_start = None  # of the running collection
        self._gc_counted = False
        self._gc_recent = []  # GcSpans a pause may take back
        self._pauses = []  # (start, end) of pauses not charged past yet

    def switch(self, phase, t=None):
        """Ends the running phase and starts ``phase`` (if another)."""
        running = self.phase
        if phase is running or phase == running:
            return
        if t is None:
            t = clock.now()
        if running is not None:
            self._charge(t)
            if self.span_lists and self.makes_span:
                self._add_span(t)
        self.phase = phase
        self.started = self._mark = t
        self.makes_span = True

    def cut(self):
        """Adds the running phase's span up to now; it goes on after."""
        t = clock.now()
        if self.phase is not None and self.makes_span and t > self.started:
            self._add_span(t)
            self.started = t
        return t

    def stop(self):
        """Ends the running phase; nothing runs until the next switch."""
        self.switch(None)

    def now(self):
        return clock.now()

    def read(self, t=None):
        """Returns :attr:`totals`, the running phase charged up to ``t``."""
        if self.phase is not None:
            if t is None:
                t = clock.now()
            self._charge(t)
            self._mark = t
        return dict(self.totals)

    def _charge(self, t):
        totals = self.totals
        totals[self.phase] = totals.get(self.phase, 0.0) + (
            t - self._mark - (self._paused_until(t) if self._pauses else 0.0))

    def paused(self, name, start, end):
        """Charges a pause to ``extension/<name>``, not to its phase."""
        phase = ExtensionPhase(name)
        totals = self.totals
        totals[phase] = totals.get(phase, 0.0) + (end - start)
        if self._gc_recent:  # the pause's collections are its time
            self._take_back_gc(start, end)
        if self.phase is not None:
            self._pauses.append((start, end))
        for spans in self.pause_lists:
            spans.append(pauses.Pause(name, start, end))

    def _paused_until(self, t):
        # The seconds of the pauses ended by t, forgotten: phases are
        # charged in order of time.
        pending = self._pauses
        total = 0.0
        i = 0
        while i < len(pending) and pending[i][1] <= t:
            total += pending[i][1] - pending[i][0]
            i += 1
        del pending[:i]
        return total

    def count_gc(self, phase, info):
        """A ``gc.callbacks`` entry: collections to :attr:`gc`, gc_lists."""
        if phase == 'start':
            self._gc_start = clock.now()
            self._gc_counted = not isinstance(self.phase, ExtensionPhase)
        elif self._gc_start is not None:
            start, t = self._gc_start, clock.now()
            self._gc_start = None
            span = _new_tuple(GcSpan, (
                info.get('generation'), info.get('collected'), start, t))
            if self._gc_counted:
                self.gc += t - start
                recent = self._gc_recent
                recent.append(span)
                if len(recent) > _GC_RECENT:
                    del recent[0]
            for spans in self.gc_lists:
                spans.append(span)

    def _take_back_gc(self, start, end):
        kept = []
        for span in self._gc_recent:
            if start <= span.start and span.end <= end:
                self.gc -= span.end - span.start
            elif span.end > start:
                kept.append(span)
        self._gc_recent = kept

    def _add_span(self, t):
        span = _new_tuple(Span, (self.phase, self.started, t))
        for spans in self.span_lists:
            spans.append(span)


class IterationTimes:
    """The iterations of an interval: at most ``size`` of their seconds
    (reservoir sampling, Algorithm R, seeded ``seed``), the ``slowest``'s
    number, ``max`` seconds and ``phases`` kept apart."""

    def __init__(self, size, seed=0):
        self.size = size
        self.seconds = []
        self.count = 0
        self.slowest = None
        self.max = None
        self.phases = {}
        self._seed = seed
        self._random = None  # seeded once the sample is full (6 us a report)

    def add(self, iteration, seconds, phases):
        """Adds an iteration; ``phases()`` is called for a new slowest."""
        self.count += 1
        kept = self.seconds
        if len(kept) < self.size:
            kept.append(seconds)
        else:
            if self._random is None:
                self._random = random.Random(self._seed)
            j = self._random.randrange(self.count)
            if j < self.size:
                kept[j] = seconds
        if self.max is None or seconds > self.max:
            self.slowest, self.max, self.phases = iteration, seconds, phases()

    def percentile(self, p):
        """Returns the ``p`` th percentile of the kept seconds by nearest
        rank, or ``None`` when none is kept.

        >>> times = IterationTimes(10)
        >>> for i, s in enumerate([4.0, 1.0, 3.0, 2.0]):
        ...     times.add(i, s, dict)
        >>> times.percentile(50), times.percentile(90), times.slowest
        (2.0, 4.0, 0)
        """
        return self.percentiles(p)[0]

    def percentiles(self, *ps):
        """Returns the tuple of :meth:`percentile` of each of ``ps``,
        sorting the kept seconds once."""
        kept = sorted(self.seconds)
        if not kept:
            return (None,) * len(ps)
        n = len(kept)
        # The rank: a ceil, in integers.
        return tuple([kept[max(int(-(-n * p // 100)), 1) - 1] for p in ps])

    def save(self, serializer):
        serializer('seconds', numpy.asarray(self.seconds, numpy.float64))
        serializer('count', numpy.asarray([self.count], numpy.int64))
        slowest = self.slowest
        serializer('slowest', numpy.asarray(
            [-1 if slowest is None else slowest], numpy.int64))
        serializer('max', numpy.asarray(
            [0.0 if slowest is None else self.max], numpy.float64))
        named = self.phases if slowest is not None else {}
        _state.save_rows(serializer['phases'], list(named), {
            'seconds': list(named.values())})

    @classmethod
    def load(cls, serializer, size):
        """Returns what :meth:`save` saved as ``tail``, or empty times."""
        try:
            tail = _state.child(serializer, 'tail')
            seconds = _state.read(tail, 'seconds')
            count, slowest, most = (
                _state.read(tail, k)[0] for k in ('count', 'slowest', 'max'))
            rows = _state.load_rows(
                _state.child(tail, 'phases'), ('seconds',))
        except _state.MissingState:
            return cls(size)
        times = cls(size, seed=int(count))
        times.seconds = [float(s) for s in numpy.ravel(seconds)][:size]
        times.count = int(count)
        if slowest >= 0:
            times.slowest, times.max = int(slowest), float(most)
            times.phases = {name: v['seconds'] for name, v in rows}
        return times

"""The one clock of every measurement (:func:`now`), and CUDA events.

Tests replace the clock here only; see docs/internals.md, "How backward
time is charged to links", for the event queue.
"""

import collections
import time

from chainer.backends import cuda


#: The host clock, in seconds.
now = time.perf_counter

#: CUDA event pairs an :class:`EventQueue` keeps before it resolves the
#: oldest half.
MAX_PENDING = 1 << 14


def is_gpu(link):
    """Returns whether ``link`` lives on a CUDA device (CuPy arrays)."""
    return cuda.available and isinstance(link.device, cuda.GpuDevice)


def record_event(event=None):
    """Records ``event`` on the current stream, or a new CUDA event when
    ``None``, and returns it."""
    if event is None:
        event = cuda.Event()
    event.record()
    return event


def elapsed(start, stop):
    """Returns the seconds between two recorded events (waits for ``stop``).
    """
    stop.synchronize()
    return cuda.cupy.cuda.get_elapsed_time(start, stop) / 1000


#: A pair of CUDA events waiting for its time: ``record`` the record it is
#: charged to, ``backward`` whether to its ``charged.backward`` (a backward
#: step) or its own ``elapsed`` (a call).
EventPair = collections.namedtuple(
    'EventPair', ('record', 'start', 'stop', 'backward'))


class EventQueue:
    """CUDA event pairs waiting for their time, and the events to reuse.

    Each pair is pushed with the record it is charged to: a call's own
    ``elapsed`` (forward), or the ``backward`` of the record's ``charged``
    (a backward step, charged when resolved, so that a record moved into
    stored trees meanwhile charges the stored one).

    Events come from :meth:`record`, which records again one that an
    earlier :meth:`resolve` gave back: a timed run creates about as many
    events as wait at once, not one per call.

    Args:
        in_use (callable): Returns the events recorded but not pushed yet
            (a running call's start), which are never given back, or
            ``None`` to give back none (a window's spans still hold them);
            ``None``: nothing is given back.

    Attributes:
        pending (list of EventPair): The pairs not resolved yet.
        free (list): Resolved events, recorded again by :meth:`record`.
        created (int): Events created so far (the rest were reused).
    """

    def __init__(self, in_use=None):
        self.pending = []
        self.free = []
        self.created = 0
        self._in_use = in_use
        self._held = []  # given back once no longer in use

    def record(self):
        """Returns an event recorded now on the current stream."""
        free = self.free
        if free:
            return record_event(free.pop())
        self.created += 1
        return record_event()

    def push(self, record, start, stop, backward=False):
        """Keeps one pair; resolves the oldest half past :data:`MAX_PENDING`.
        """
        pending = self.pending
        pending.append(EventPair(record, start, stop, backward))
        if len(pending) >= MAX_PENDING:
            self.resolve(MAX_PENDING // 2)

    def resolve(self, n=None):
        """Adds the time of the first ``n`` (all) pending pairs, and gives
        their events back (see the class)."""
        pending = self.pending
        n = len(pending) if n is None else n
        for pair in pending[:n]:
            seconds = max(elapsed(pair.start, pair.stop), 0.0)
            if pair.backward:
                pair.record.charged.backward += seconds
            else:
                pair.record.elapsed += seconds
        in_use = self._in_use() if self._in_use is not None else None
        if in_use is not None:
            self._give_back(pending[:n], list(in_use) + [
                e for pair in pending[n:] for e in (pair.start, pair.stop)])
        del pending[:n]

    def _give_back(self, pairs, keep):
        # Each event once (a stop is often the next pair's start); those
        # still to be read are held back until a later call finds them
        # free.
        kept = {id(e) for e in keep}
        seen = set()
        held, self._held = self._held, []
        free = self.free
        for event in held + [e for pair in pairs
                             for e in (pair.start, pair.stop)]:
            if id(event) in seen:
                continue
            seen.add(id(event))
            (self._held if id(event) in kept else free).append(event)

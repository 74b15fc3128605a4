"""The one clock of every measurement (:func:`now`; tests replace it here
only), and the CUDA event queue."""

import collections
import time

from chainer.backends import cuda


now = time.perf_counter

#: Pending event pairs past which the oldest half is resolved.
MAX_PENDING = 1 << 14


def is_gpu(link):
    """Returns whether ``link`` lives on a CUDA device (CuPy arrays)."""
    return cuda.available and isinstance(link.device, cuda.GpuDevice)


def record_event(event=None):
    """Records ``event`` (a new one when ``None``) and returns it."""
    if event is None:
        event = cuda.Event()
    event.record()
    return event


def elapsed(start, stop):
    """Returns the seconds between two recorded events."""
    stop.synchronize()
    return cuda.cupy.cuda.get_elapsed_time(start, stop) / 1000


#: CUDA events waiting for their time: charged to ``record.charged.backward``
#: (a step: the record may have been stored since) or ``record.elapsed``.
EventPair = collections.namedtuple(
    'EventPair', ('record', 'start', 'stop', 'backward'))


class EventQueue:
    """CUDA event pairs waiting for their time, and resolved events that
    :meth:`record` records again; ``in_use()`` returns the events never
    given back, or ``None``: none is given back."""

    def __init__(self, in_use=None):
        self.pending = []
        self.free = []
        self.created = 0
        self._in_use = in_use
        self._held = []  # given back once no longer in use

    def record(self):
        free = self.free
        if free:
            return record_event(free.pop())
        self.created += 1
        return record_event()

    def push(self, record, start, stop, backward=False):
        """Keeps one pair; resolves the oldest half past MAX_PENDING."""
        pending = self.pending
        pending.append(EventPair(record, start, stop, backward))
        if len(pending) >= MAX_PENDING:
            self.resolve(MAX_PENDING // 2)

    def resolve(self, n=None):
        """Adds the time of the first ``n`` (all) pending pairs."""
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
        # Each event once (a stop is often the next start); those in
        # ``keep`` are held until a later call.
        kept = {id(e) for e in keep}
        held, self._held = self._held, []
        for key, event in {id(e): e for e in held + [
                e for pair in pairs for e in (pair.start, pair.stop)]}.items():
            (self._held if key in kept else self.free).append(event)

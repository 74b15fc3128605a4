"""The one clock of every measurement, and CUDA events.

Every time the package measures on the host is read from :func:`now`
(``time.perf_counter``): link calls, backward steps, the loop's phases and
the spans of a :class:`~chainer_hookext.Timeline` window.  Links on a GPU
are timed with CUDA events recorded on the current stream
(:func:`record_event`), kept in an :class:`EventQueue` and turned into
seconds (:func:`elapsed`) only when figures are read or when too many
pairs wait: nothing waits for the device while the model runs.

Readers call ``clock.now()`` through this module at each read, so that tests
replace the clock here, and only here (``tests/conftest.py``'s ``clock``
fixture; the fake CUDA events of ``fake_cuda`` likewise replace
:func:`is_gpu`, :func:`record_event` and :func:`elapsed`).
"""

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


def record_event():
    """Returns a new CUDA event recorded on the current stream."""
    event = cuda.Event()
    event.record()
    return event


def elapsed(start, stop):
    """Returns the seconds between two recorded events (waits for ``stop``).
    """
    stop.synchronize()
    return cuda.cupy.cuda.get_elapsed_time(start, stop) / 1000


class EventQueue(object):
    """CUDA event pairs waiting for their time, and where it goes.

    Each pair is pushed with the record it is charged to: a call's own
    ``elapsed`` (forward), or the ``backward`` of the record's ``owner``
    (a backward step, charged when resolved, so that a record moved into
    stored trees meanwhile charges the stored one).
    """

    def __init__(self):
        self.pending = []  # (record, start, stop, backward)

    def push(self, record, start, stop, backward=False):
        """Keeps one pair; resolves the oldest half past :data:`MAX_PENDING`.
        """
        pending = self.pending
        pending.append((record, start, stop, backward))
        if len(pending) >= MAX_PENDING:
            self.resolve(MAX_PENDING // 2)

    def resolve(self, n=None):
        """Adds the time of the first ``n`` (all) pending pairs."""
        pending = self.pending
        n = len(pending) if n is None else n
        for record, start, stop, backward in pending[:n]:
            seconds = max(elapsed(start, stop), 0.0)
            if backward:
                record.charged.backward += seconds
            else:
                record.elapsed += seconds
        del pending[:n]

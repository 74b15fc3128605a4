"""Our own work, taken out of every measurement running around it
(docs/timing.md, "`TimedLoop`": a pause).

:func:`own_work` (or :func:`paused`, on a hot path) tells the calling
thread's listeners (``paused(name, start, end)``, :func:`listen`).
"""

import bisect
import collections
import contextlib
import itertools
import threading

from chainer_hookext import _copies
from chainer_hookext.timing import clock


#: One pause: ``name`` the extension whose work it was (its phase is
#: ``extension/<name>``), ``start`` and ``end`` clock seconds.
Pause = collections.namedtuple('Pause', ('name', 'start', 'end'))

_local = threading.local()


def _listeners():
    try:
        return _local.listeners
    except AttributeError:
        listeners = _local.listeners = []
        return listeners


def listen(listener):
    """Tells ``listener`` of the calling thread's pauses from now on.

    Returns:
        Listening: The handle for :func:`stop_listening`, from any thread.
    """
    listeners = _listeners()
    if not any(registered is listener for registered in listeners):
        listeners.append(listener)
    return Listening(listeners, listener)


class Listening(collections.namedtuple(
        'Listening', ('listeners', 'listener'))):
    """What :func:`listen` returns.  A pickle or a copy of it (of a hook,
    during training) is ``None``: the copy listens to nothing."""

    __slots__ = ()

    def __reduce__(self):
        return _copies.same, (None,)


def stop_listening(handle):
    """Stops telling the listener of ``handle``; does nothing when it is
    ``None`` or no longer listening."""
    if handle is None:
        return
    listeners, listener = handle
    for i, registered in enumerate(listeners):
        if registered is listener:
            del listeners[i]
            return


def paused(name, start, end=None):
    """Tells the thread's listeners that ``[start, end]`` was ``name``'s work.

    Args:
        name (str): The extension whose work it was.
        start (float): When the work started (``clock.now()``).
        end (float): When it ended; now when ``None``.

    Returns:
        float: ``end``.
    """
    if end is None:
        end = clock.now()
    for listener in list(_listeners()):
        listener.paused(name, start, end)
    return end


@contextlib.contextmanager
def own_work(name):
    """Takes the time inside out of every measurement running around it,
    and charges it to ``extension/<name>``.

    .. admonition:: Example

        >>> with own_work('LinkMemory'):
        ...     pass  # the extension's work
    """
    start = clock.now()
    try:
        yield
    finally:
        paused(name, start)


class PauseIndex:
    """The pauses of a window, to put its spans back on the clock.

    A timer moves the start of a running call by each pause inside it, so
    that ``end - start`` is the call's time without them: :meth:`start`
    gives back where the call really started.  :meth:`cut` gives the parts
    of a span outside the pauses (a phase's time without our work).

    Args:
        pauses (list of Pause): In order of time, not overlapping.
    """

    def __init__(self, pauses):
        self.pauses = list(pauses)
        self._ends = [p.end for p in self.pauses]
        lengths = [p.end - p.start for p in self.pauses]
        self._before = [0.0] + list(itertools.accumulate(lengths))
        # each pause's start on the clock without the pauses before it
        self._starts = [p.start - before
                        for p, before in zip(self.pauses, self._before)]

    def start(self, moved, end):
        """Returns the real start of a call timed as ``[moved, end]``."""
        if not self.pauses:
            return moved
        virtual = moved - self._before[bisect.bisect_right(self._ends, end)]
        return virtual + self._before[
            bisect.bisect_left(self._starts, virtual)]

    def cut(self, start, end):
        """Returns the pieces of ``[start, end]`` outside the pauses.

        Returns:
            list of tuple: ``(start, end)`` of each piece, in order; the
            span itself when no pause lies inside it; one empty piece at
            the end of the pause that holds all of it.
        """
        pieces = []
        for pause in itertools.islice(
                self.pauses, bisect.bisect_right(self._ends, start), None):
            if pause.start >= end:
                break
            if pause.start > start:
                pieces.append((start, pause.start))
            start = max(start, pause.end)
        if end > start or not pieces:
            pieces.append((start, max(start, end)))
        return pieces

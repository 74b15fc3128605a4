"""Our own work (a pause), taken out of every measurement around it: the
thread's listeners are told (docs/timing.md, "`TimedLoop`: where each
iteration goes")."""

import bisect
import collections
import itertools
import threading

from chainer_hookext import _copies
from chainer_hookext.timing import clock


#: The extension whose work it was, and clock seconds.
Pause = collections.namedtuple('Pause', ('name', 'start', 'end'))

_local = threading.local()


def _listeners():
    if not hasattr(_local, 'listeners'):
        _local.listeners = []
    return _local.listeners


def listen(listener):
    """Tells ``listener`` of the calling thread's pauses from now on;
    returns the handle for :func:`stop_listening` (from any thread)."""
    listeners = _listeners()
    if not any(registered is listener for registered in listeners):
        listeners.append(listener)
    return Listening(listeners, listener)


class Listening(collections.namedtuple(
        'Listening', ('listeners', 'listener'))):
    """What :func:`listen` returns; a pickle or copy of it is ``None``."""

    __slots__ = ()

    def __reduce__(self):
        return _copies.same, (None,)


def stop_listening(handle):
    """Stops telling the listener of ``handle`` (if any)."""
    if handle is not None:
        listeners, listener = handle
        for i, registered in enumerate(listeners):
            if registered is listener:
                del listeners[i]
                break


def paused(name, start, end=None):
    """Tells the thread's listeners that ``[start, end]`` (``end`` now by
    default) was extension ``name``'s work; returns ``end``."""
    if end is None:
        end = clock.now()
    for listener in list(_listeners()):
        listener.paused(name, start, end)
    return end


class own_work:
    """Charges the time inside to ``extension/<name>``, not to what runs
    around it (a class, not a generator: entered every iteration).

    .. admonition:: Example

        >>> with own_work('LinkMemory'):
        ...     pass  # the extension's work
    """

    __slots__ = ('name', 'start')

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.start = clock.now()

    def __exit__(self, *exc_info):
        paused(self.name, self.start)


class PauseIndex:
    """A window's pauses, to put the starts a timer moved back on the clock.
    """

    def __init__(self, pauses):
        self.pauses = list(pauses)
        self._ends = [p.end for p in self.pauses]
        self._before = [0.0] + list(itertools.accumulate(
            p.end - p.start for p in self.pauses))
        # each start on the clock without the pauses before it
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
        """Returns the ``(start, end)`` pieces of ``[start, end]`` outside
        the pauses; one empty piece when a pause holds all of it."""
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

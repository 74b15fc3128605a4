"""Spans of link calls and backward steps, kept while a Timeline records.
"""

import collections

from chainer_hookext.timing import clock
from chainer_hookext.timing import records


#: A link call or a backward step: ``record`` the call record timed (for a
#: step, the one charged), ``start`` and ``end`` clock seconds, or CUDA
#: events until :meth:`Recording.resolve`.
Span = collections.namedtuple('Span', ('record', 'start', 'end'))


#: A function node's forward, or a backward step, by type
#: (``functions=True``): ``record`` the call record charged, ``function``
#: the node's class name, ``start`` and ``end`` clock seconds (the host
#: clock's only), ``backward`` whether a step.
FunctionSpan = collections.namedtuple(
    'FunctionSpan', ('record', 'function', 'start', 'end', 'backward'))


def name_of(record):
    """Returns the name of a span's record: its link's reporter-style name
    (``main/predictor/l1``), or ``'(outside)'`` for steps of nodes created
    outside every timed link."""
    return records.OUTSIDE if record.labels is None else record.labels.name


class Recording:
    """The spans a timer kept for one window.

    Attributes:
        forward (list of Span): Each ended call of a link in scope.
        backward (list of Span): Each backward step, in order.
        functions (list of FunctionSpan): With functions, each node's
            forward and each step, by type.
        gpu (bool): Whether the latest spans' times are CUDA events.
    """

    def __init__(self):
        self.forward = []
        self.backward = []
        self.functions = []
        self.gpu = False
        self._origin = None  # (seconds, event) for the events not resolved
        self._resolved = 0, 0  # spans resolved, forward and backward

    def use_gpu(self, gpu):
        """Times later spans with CUDA events (``True``) or the clock.

        The spans so far are resolved (a device change: rare).
        """
        self.resolve()
        self.gpu = gpu
        self._origin = (clock.now(), clock.record_event()) if gpu else None

    def resolve(self):
        """Turns the CUDA events so far into clock seconds (waits for the
        last)."""
        if self._origin is not None:
            origin, event = self._origin

            def seconds(e):
                return origin + clock.elapsed(event, e)
            for spans, done in zip((self.forward, self.backward),
                                   self._resolved):
                spans[done:] = [s._replace(start=seconds(s.start),
                                           end=seconds(s.end))
                                for s in spans[done:]]
        self._resolved = len(self.forward), len(self.backward)

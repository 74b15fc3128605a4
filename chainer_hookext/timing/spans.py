"""Spans of link calls and backward steps, kept while a ``Timeline``
records (docs/timing.md, "`Timeline`: a trace of chosen iterations").
"""

import collections

from chainer_hookext.timing import clock
from chainer_hookext.timing import records


#: A link call or a backward step: ``record`` the call record timed (or
#: charged), clock seconds, or CUDA events until :meth:`Recording.resolve`.
Span = collections.namedtuple('Span', ('record', 'start', 'end'))


#: A node's forward, or a backward step, by type (``functions=True``):
#: ``function`` the node's class name, host clock seconds.
FunctionSpan = collections.namedtuple(
    'FunctionSpan', ('record', 'function', 'start', 'end', 'backward'))


def name_of(record):
    """Returns the reporter-style name of a span's record's link, or
    :data:`.records.OUTSIDE`."""
    return records.OUTSIDE if record.labels is None else record.labels.name


class Recording:
    """The spans a timer kept for one window.

    Attributes:
        forward, backward (list of Span): Each ended link call in scope,
            each backward step.
        functions (list of FunctionSpan): With ``functions=True``.
        gpu (bool): Whether the latest spans' times are CUDA events.
    """

    def __init__(self):
        self.forward = []
        self.backward = []
        self.functions = []
        self.gpu = False
        self._origin = None  # (seconds, event) for the events not resolved
        self._resolved = 0, 0  # forward and backward spans resolved

    def use_gpu(self, gpu):
        """Times later spans with CUDA events or the clock (the spans so
        far are resolved)."""
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

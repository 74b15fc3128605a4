"""Spans of link calls and backward steps, kept while a ``Timeline``
records (docs/timing.md, "`Timeline`: a trace of chosen iterations").
"""

import collections
import functools

from chainer_hookext.timing import clock
from chainer_hookext.timing import records


#: A link call or a backward step: clock seconds, or CUDA events until
#: :meth:`Recording.resolve`.
Span = collections.namedtuple('Span', ('record', 'start', 'end'))
#: ``new_span((record, start, end))``: a :class:`Span` made with no Python
#: frame (a namedtuple's ``__new__`` is one), per call and step recorded.
new_span = functools.partial(tuple.__new__, Span)


#: A node's forward or backward step (``functions=True``), clock seconds.
FunctionSpan = collections.namedtuple(
    'FunctionSpan', ('record', 'function', 'start', 'end', 'backward'))


def name_of(record):
    """Returns the name of a span's record's link, or ``OUTSIDE``."""
    return records.OUTSIDE if record.labels is None else record.labels.name


class Recording:
    """The spans a timer kept for one window (``gpu``: CUDA events)."""

    def __init__(self):
        self.forward = []
        self.backward = []
        self.functions = []
        self.gpu = False
        self._origin = None  # (seconds, event) for the events not resolved
        self._resolved = 0, 0  # forward and backward spans resolved

    def use_gpu(self, gpu):
        """Times later spans with CUDA events or the clock."""
        self.resolve()
        self.gpu = gpu
        self._origin = (clock.now(), clock.record_event()) if gpu else None

    def resolve(self):
        """Turns the CUDA events so far into clock seconds."""
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

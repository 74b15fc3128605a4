"""Spans of link calls and backward steps, recorded during a window.

:class:`LinkSpans` is a link hook registered only while a
:class:`~chainer_hookext.Timeline` window records.  Its forward spans are
the timed links' calls, nested as the calls nest.  Its function hook (a
:class:`~chainer_hookext._tagging.NodeTagger`) tags each node
with the innermost running link's name and records each backward step;
:func:`backward_runs` joins consecutive steps of the same link into one
span, so that a layer's backward is one block.

On a GPU, times are CUDA events recorded on the stream, turned into
seconds when the window ends (:meth:`LinkSpans.resolve`): no device
synchronisation per call.
"""

import collections

from chainer_hookext.timing import phases
from chainer_hookext.link_hooks import _active_links
from chainer_hookext import _tagging
from chainer_hookext.link_hooks import scoped_link_hook
from chainer_hookext.timing import clock
from chainer_hookext.report import keys


#: A backward span: ``steps`` steps of ``seconds`` in all.
BackwardRun = collections.namedtuple(
    'BackwardRun', ('name', 'start', 'end', 'steps', 'seconds'))


class LinkSpans(scoped_link_hook.ScopedLinkHook):
    """Link hook recording the forward span of each scoped link call.

    Attributes:
        forward (list of ~.phases.Span): The ended calls; clock times in
            seconds (CUDA events until :meth:`resolve`).
        steps (list): ``(name, start, end)`` of each backward step.
    """

    name = 'Timeline'

    def __init__(self, gpu=False):
        super().__init__()
        self.gpu = gpu
        self.active = _active_links.ActiveLinks()
        self.forward = []
        self.steps = []
        self.in_step = 0  # backward steps running (F.forget recomputes)
        self._starts = []
        self._tagger = None
        self._now = clock.record_event if gpu else clock.now
        self.origin = (clock.now(), self._now() if gpu else None)

    def added(self, link):
        if self._tagger is None:
            self._tagger = _tagging.new_tagger(_StepRecorder, self)
        else:
            self._tagger.register()

    def deleted(self, link):
        tagger = self._tagger
        if tagger is not None:
            tagger.unregister()
            if not tagger.registered:
                self._tagger = None
        self.active.reset()

    def forward_preprocess(self, args):
        if self.in_step:  # recomputed inside a backward step: its time
            return
        link = args.link
        names = self.link_names
        name = None if names is None else names.get(id(link))
        if names is not None and name is None:
            return
        if not self.in_scope(link):
            return
        depth = len(self.active.names)
        del self._starts[depth:]
        self._starts.append(self._now())
        self.active.enter(link, name)

    def forward_postprocess(self, args):
        end = self._now()
        name = self.active.leave(args.link)
        if name is None:
            return
        depth = len(self.active.names)
        self.forward.append(phases.Span(name, self._starts[depth], end, depth))
        del self._starts[depth:]

    def resolve(self):
        """Turns CUDA events into clock seconds (waits for the last)."""
        if not self.gpu:
            return
        origin, event = self.origin

        def seconds(e):
            return origin + clock.elapsed(event, e)
        self.forward = [s._replace(start=seconds(s.start), end=seconds(
            s.end)) for s in self.forward]
        self.steps = [(n, seconds(a), seconds(b)) for n, a, b in self.steps]


class _StepRecorder(_tagging.NodeTagger):
    # Tags nodes with the innermost running link; records backward steps.
    # Steps run inside a step (F.forget recomputing its forward and
    # backpropagating through it) are the outer step's time.

    def __init__(self, spans):
        super().__init__(spans.name + '_backward')
        self.spans = spans
        self._start = None

    def forward_preprocess(self, function, in_data):
        names = self.spans.active.names
        function._chainer_hookext_tag = names[-1] if names else None

    def backward_preprocess(self, function, in_data, out_grad):
        spans = self.spans
        spans.in_step += 1
        if spans.in_step == 1:
            self._start = spans._now()

    def backward_postprocess(self, function, in_data, out_grad):
        spans = self.spans
        spans.in_step -= 1
        if spans.in_step:
            return
        end = spans._now()
        name = self.tag_of(function) or keys.OUTSIDE
        spans.steps.append((name, self._start, end))


def backward_runs(steps):
    """Joins consecutive steps of the same link: one span per run.

    Args:
        steps (list): ``(name, start, end)`` in order.

    Returns:
        list of BackwardRun: Each with its number of steps and their
        seconds (the link's share of the span is ``seconds`` over its
        length).
    """
    runs = []
    for name, start, end in steps:
        if runs and runs[-1].name == name:
            last = runs[-1]
            runs[-1] = last._replace(end=end, steps=last.steps + 1,
                                     seconds=last.seconds + (end - start))
        else:
            runs.append(BackwardRun(name, start, end, 1, end - start))
    return runs

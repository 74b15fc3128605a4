"""What a :class:`~chainer_hookext.Timeline` records, cut at iteration starts.

A :class:`Recorder` registers the Timeline's own
:class:`~chainer_hookext.TimerHook` and adds a list to the loop clock's
``span_lists`` and ``gc_lists``, from :meth:`~Recorder.start` to
:meth:`~Recorder.stop`: one recording, whatever asks for it (a window, the
outlier traces, or both).  :meth:`~Recorder.cut` ends the :class:`Piece`
recorded so far and starts the next one, without a clock read: a window
keeps the pieces of its iterations, the outlier traces the last two.
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext import _registry
from chainer_hookext.report import link_names
from chainer_hookext.timing import spans
from chainer_hookext.timing import trace_events

#: What was recorded between two cuts: ``links`` a
#: :class:`~chainer_hookext.timing.spans.Recording`, ``phase_spans`` the
#: loop clock's :class:`~chainer_hookext.timing.phases.Span` and
#: ``gc_spans`` its :class:`~chainer_hookext.timing.phases.GcSpan`.
Piece = collections.namedtuple('Piece', ('links', 'phase_spans', 'gc_spans'))


class Recorder(object):
    """The Timeline's hook registered and its spans kept, or not.

    Args:
        timer (~chainer_hookext.TimerHook): The Timeline's own hook
            (``backward=True``).
    """

    def __init__(self, timer):
        self.timer = timer
        self._handle = None
        self._clock = None
        self._piece = None  # the piece being recorded

    @property
    def running(self):
        """Whether the hook is registered and spans are kept."""
        return self._piece is not None

    def start(self, trainer, loop, validation):
        """Registers the hook on the update's calls (and an ``Evaluator``'s
        with ``validation``) and starts a piece; the loop's clock runs.

        Args:
            trainer (~chainer.training.Trainer): The trainer.
            loop (~chainer_hookext.run.loop_phases.LoopPhases): Its loop.
            validation (bool): Also the calls inside ``Evaluator``\\ s.
        """
        optimizers = trainer.updater.get_all_optimizers()
        model = link_names.model_link_names(trainer)
        hook = self.timer
        hook.set_scope({i: name for i, (name, _) in model.items()},
                       train=True, eval=validation)
        for name, optimizer in optimizers.items():  # paths as TimedLinks'
            hook.add_root(
                optimizer.target, '/' if len(optimizers) == 1 else '/' + name)
        hook.set_iteration_parts(loop.parts)  # the update's calls
        self._handle = _registry.add(_chainer.link_hooks(), hook)
        self._clock = loop.clock
        self._piece = Piece(spans.Recording(), [], [])
        hook.start_spans(self._piece.links)
        self._clock.span_lists.append(self._piece.phase_spans)
        self._clock.gc_lists.append(self._piece.gc_spans)

    def cut(self):
        """Returns the piece recorded so far; the next one starts."""
        old = self._piece
        new = self._piece = Piece(spans.Recording(), [], [])
        self.timer.start_spans(new.links)
        _replace(self._clock.span_lists, old.phase_spans, new.phase_spans)
        _replace(self._clock.gc_lists, old.gc_spans, new.gc_spans)
        return old

    def stop(self):
        """Returns the last piece, or ``None`` when not running; removes
        the hook and the lists.  Safe to call again."""
        piece, self._piece = self._piece, None
        if piece is None:
            return None
        clock, self._clock = self._clock, None
        handle, self._handle = self._handle, None
        _replace(clock.span_lists, piece.phase_spans, None)
        _replace(clock.gc_lists, piece.gc_spans, None)
        self.timer.stop_spans()
        try:
            _registry.remove(handle, self.timer)
        finally:
            self.timer.set_iteration_parts(None)
        return piece


def _replace(lists, old, new):
    # ``old`` (this very list: an equal one may be another's) replaced by
    # ``new``, or taken out.
    for i, found in enumerate(lists):
        if found is old:
            if new is None:
                del lists[i]
            else:
                lists[i] = new
            return


def joined(pieces):
    """Returns one piece of ``pieces``, in order, their link spans resolved
    (CUDA events waited for).  One piece is returned as it is."""
    for piece in pieces:
        piece.links.resolve()
    if len(pieces) == 1:
        return pieces[0]
    links = spans.Recording()
    phase_spans, gc_spans = [], []
    for piece in pieces:
        links.forward += piece.links.forward
        links.backward += piece.links.backward
        links.gpu = links.gpu or piece.links.gpu
        phase_spans += piece.phase_spans
        gc_spans += piece.gc_spans
    links.resolve()  # nothing left to resolve: marks them resolved
    return Piece(links, phase_spans, gc_spans)


def window_events(iteration_starts, end, pieces, rank):
    """Returns the trace events of the iterations that start at
    ``iteration_starts`` (``[(number, start)]``) and end at ``end``,
    recorded in ``pieces``, for process ``rank``."""
    piece = joined(pieces)
    recorded = trace_events.Window(
        iteration_starts, end, piece.phase_spans, piece.links,
        piece.gc_spans)
    return trace_events.window_events(recorded, rank, piece.links.gpu)

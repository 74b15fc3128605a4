"""What a :class:`~chainer_hookext.Timeline` records, cut at iteration
starts: one :class:`Recorder` per recording, a :class:`Piece` per cut.
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext import _registry
from chainer_hookext.extensions import timed_links
from chainer_hookext.memory import timeline as memory_timeline
from chainer_hookext.report import link_names
from chainer_hookext.timing import spans
from chainer_hookext.timing import trace_events

#: What was recorded between two cuts; ``links``: a ``spans.Recording``.
Piece = collections.namedtuple(
    'Piece', ('links', 'phase_spans', 'gc_spans', 'pauses'))
#: The loop clock's lists each receiving a piece's field.
_CLOCK_LISTS = (('span_lists', 'phase_spans'), ('gc_lists', 'gc_spans'),
                ('pause_lists', 'pauses'))


class Recorder:
    """Records with ``timer`` (the Timeline's own) or TimedLinks'."""

    def __init__(self, timer):
        self.timer = timer
        self._hook = None  # ``timer`` or TimedLinks'
        self._handle = None  # ``timer``'s registration, when it is used
        self._clock = None
        self._piece = None
        self.links = None  # the running piece's ``spans.Recording``

    @property
    def running(self):
        return self._piece is not None

    def start(self, trainer, loop, validation, functions=False):
        """Registers the hook and starts a piece; ``loop``'s clock runs."""
        model = link_names.model_link_names(trainer)
        scope = {i: name for i, (name, _) in model.items()}
        hook = _timed_links_timer(trainer, scope, validation, functions)
        if hook is None:
            hook = self.timer
            hook.set_scope(scope, train=True, eval=validation)
            optimizers = trainer.updater.get_all_optimizers()
            for name, optimizer in optimizers.items():  # as TimedLinks'
                hook.add_root(optimizer.target,
                              '/' if len(optimizers) == 1 else '/' + name)
            hook.set_iteration_parts(loop.parts)  # the update's calls
            self._handle = _registry.add(_chainer.link_hooks(), hook)
            loop.parts.set_phase_reader(hook)  # its reads, the phases'
        self._hook = hook
        self._clock = loop.clock
        self.cut()

    def cut(self):
        """Returns the piece recorded so far (``None`` at the start); the
        next one starts."""
        old = self._piece
        new = self._piece = Piece(spans.Recording(), [], [], [])
        self.links = new.links
        self._hook.start_spans(new.links)
        for lists, field in _CLOCK_LISTS:
            _replace(getattr(self._clock, lists), getattr(old, field, None),
                     getattr(new, field))
        return old

    def stop(self):
        """Returns the last piece, or ``None`` when not running."""
        piece, self._piece = self._piece, None
        self.links = None
        if piece is None:
            return None
        clock, hook, handle = self._clock, self._hook, self._handle
        self._clock = self._hook = self._handle = None
        for lists, field in _CLOCK_LISTS:
            _replace(getattr(clock, lists), getattr(piece, field), None)
        hook.stop_spans()
        if handle is None:  # TimedLinks' timer: it goes on timing
            return piece
        parts = hook.parts
        try:
            _registry.remove(handle, hook)
        finally:
            hook.set_iteration_parts(None)
            if parts is not None and parts.phase_marks is not None and (
                    parts.phase_marks.reader is hook):
                parts.set_phase_reader(None)
        return piece


def _replace(lists, old, new):
    # By identity (an equal list may be another's); ``old`` None: ``new``
    # added; ``new`` None: ``old`` removed.
    if old is None:
        lists.append(new)
        return
    for i, found in enumerate(lists):
        if found is old:
            if new is None:
                del lists[i]
            else:
                lists[i] = new
            return


def joined(pieces):
    """``pieces`` as one, their link spans resolved."""
    for piece in pieces:
        piece.links.resolve()
    if len(pieces) == 1:
        return pieces[0]
    joined = Piece(spans.Recording(), [], [], [])
    links = joined.links
    for piece in pieces:
        for field in ('forward', 'backward', 'functions'):
            getattr(links, field).extend(getattr(piece.links, field))
        links.gpu = links.gpu or piece.links.gpu
        for _, field in _CLOCK_LISTS:
            getattr(joined, field).extend(getattr(piece, field))
    links.resolve()  # nothing left to resolve: marks them resolved
    return joined


def window_events(iteration_starts, end, pieces, rank, memory=None):
    """The trace events of ``iteration_starts`` (``[(number, start)]``) to
    ``end``, with ``memory``'s (a ``MemoryTimeline``) counters."""
    piece = joined(pieces)
    recorded = trace_events.Window(
        iteration_starts, end, piece.phase_spans, piece.links,
        piece.gc_spans, piece.pauses, None if memory is None else (
            memory_timeline.recorded(memory, iteration_starts, end)))
    return trace_events.window_events(recorded, rank, piece.links.gpu)


def _timed_links_timer(trainer, scope, validation, functions):
    # TimedLinks' timer when it times all of ``scope`` in every mode shown.
    for entry in _chainer.extension_entries(trainer).values():
        extension = entry.extension
        if not isinstance(extension, timed_links.TimedLinks):
            continue
        hook, names = extension.hook, extension.hook.link_names
        if extension.registered_hook() is not hook or hook.parts is None or (
                names is not None and any(names.get(i) != name
                                          for i, name in scope.items())) or (
                hook.config_train is True and validation) or (
                functions and not hook.functions):
            return None
        return hook
    return None

"""One phase clock and one set of marks per trainer's loop, shared by
``TimedLoop`` and ``Timeline`` (docs/internals.md, "Layout"; docs/timing.md,
"`TimedLoop`: where each iteration goes").
"""

import gc
import typing
import weakref

import chainer
from chainer.training import extension

from chainer_hookext import _copies
from chainer_hookext.run import training_loop
from chainer_hookext.timing import marks as marks_module
from chainer_hookext.timing import pauses
from chainer_hookext.timing import phases


# {trainer: LoopPhases}, while an extension reads them.
_shared = weakref.WeakKeyDictionary()


class LoopPhases:
    """The phase clock of one trainer's loop and the marks driving it
    (use :meth:`subscribe`)."""

    def __init__(self, trainer):
        self._trainer = weakref.ref(trainer)
        self._readers = []
        self._calls = ((), (), ())
        self.clock = None
        self.iteration_start = None
        self._marks = None
        self._gc_callback = None
        self._pauses = None
        self._entry = training_loop.TrainingLoop.install(
            trainer, self._enter, self._end, self._iteration, self._check)

    def __reduce__(self):
        return _copies.same, (None,)

    @property
    def parts(self):
        return self._entry.parts

    @classmethod
    def subscribe(cls, trainer, reader):
        """``trainer``'s loop phases, read by ``reader`` (a
        :class:`LoopExtension`) from now."""
        shared = _shared.get(trainer)
        if shared is None:
            shared = _shared[trainer] = cls(trainer)
        if reader not in shared._readers:
            shared._readers.append(reader)
            shared._calls = _calls(shared._readers)
        return shared

    def unsubscribe(self, reader):
        """Forgets ``reader``; removes the marks after the last one."""
        if reader in self._readers:
            self._readers.remove(reader)
            self._calls = _calls(self._readers)
        if not self._readers:
            self._close()

    def _close(self):
        trainer = self._trainer()
        if trainer is not None and _shared.get(trainer) is self:
            del _shared[trainer]
        self._entry.discard(self._enter)
        handle, self._pauses = self._pauses, None
        pauses.stop_listening(handle)
        marks, self._marks = self._marks, None
        if marks is not None:
            if self.parts.phase_marks is marks.phase_marks:
                self.parts.phase_marks = None
            self.clock.stop()
            marks.remove()
        callback, self._gc_callback = self._gc_callback, None
        if callback is not None:  # exactly ours, not an equal one
            gc.callbacks[:] = [c for c in gc.callbacks if c is not callback]

    def _enter(self):
        # In the training thread: the hook goes in its registry.
        self.clock = phases.PhaseClock()
        marks = marks_module.Marks(self.clock)
        marks.add(self._trainer(), chainer.get_function_hooks())
        self._marks = marks
        self.parts.phase_marks = marks.phase_marks
        self._gc_callback = self.clock.count_gc  # one bound method, kept
        gc.callbacks.append(self._gc_callback)
        self._pauses = pauses.listen(self.clock)

    def _check(self):
        # Before each stop trigger call: ``other`` from the first
        # iteration's end.
        if self._marks is None:
            return
        if self.clock.phase is not None:
            self._marks.outside_update(phases.OTHER)
        ending = self._calls[2]
        if ending:
            trainer = self._trainer()
            for method in ending:
                method(trainer)

    def _iteration(self, trainer):
        if self._marks is None:
            return
        self._marks.iteration_started()
        self.iteration_start = self.clock.started
        # Every reader sees the start before any does own work there.
        ended, started, _ = self._calls
        for method in ended:
            method(trainer)
        for method in started:
            method(trainer)

    def own_work(self, name):
        """:func:`.timing.pauses.own_work`."""
        return pauses.own_work(name)

    def _end(self):
        try:
            training_loop.call_all([r.release for r in self._readers])
        finally:
            self._close()


def _calls(readers):
    # The readers' overrides of LoopExtension's (a copy: one may leave).
    return tuple(
        tuple(getattr(reader, name) for reader in readers
              if getattr(type(reader), name) is not getattr(
                  LoopExtension, name))
        for name in ('iteration_ended', 'iteration_started',
                     'iteration_ending'))


class LoopExtension(extension.Extension):
    """Base of :class:`~chainer_hookext.TimedLoop` and
    :class:`~chainer_hookext.Timeline`: reads its trainer's
    :class:`LoopPhases`.  Subclasses call ``super().initialize(trainer)``
    and, in a ``release`` of their own, ``super().release()``."""

    def __init__(self):
        self._loop = None
        self._trainer = None

    @property
    def _clock(self):
        loop = self._loop
        return None if loop is None else loop.clock

    def initialize(self, trainer: chainer.training.Trainer) -> None:
        self.release()
        self._trainer = trainer
        self._loop = LoopPhases.subscribe(trainer, self)

    def iteration_ended(self, trainer: chainer.training.Trainer) -> None:
        """At each iteration's start, before any :meth:`iteration_started`.
        """

    def iteration_started(self, trainer: chainer.training.Trainer
                          ) -> None:
        """At each iteration's start, the clock started."""

    def iteration_ending(self, trainer: chainer.training.Trainer) -> None:
        """Before each call of the stop trigger, the first included."""

    def release(self) -> None:
        """Stops reading the loop's phases; safe to call many times."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.unsubscribe(self)

    def on_error(self, trainer: chainer.training.Trainer,
                 exc: BaseException, tb: typing.Any) -> None:
        self.release()

    def finalize(self) -> None:
        self.release()

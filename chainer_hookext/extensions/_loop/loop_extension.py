"""The lifecycle shared by the extensions that time the loop's phases.

A :class:`LoopExtension` owns a :class:`~.phases.PhaseClock` and the
wrappers that drive it (:mod:`.wrappers`): they are put on when
``Trainer.run`` enters its loop and taken off when it ends, every way out
(:class:`~chainer_hookext.extensions._loop_entry.LoopEntry`), which also
tells each iteration's start.
"""

from chainer.training import extension

from chainer_hookext.extensions import _loop_entry
from chainer_hookext.extensions._loop import phases
from chainer_hookext.extensions._loop import wrappers


class LoopExtension(extension.Extension):
    """Base of :class:`~chainer_hookext.TimedLoop` and
    :class:`~chainer_hookext.Timeline`: the phase clock, for the loop.

    Subclasses call ``super().initialize(trainer)`` and may override
    :meth:`iteration_started`.
    """

    def __init__(self):
        self._clock = phases.PhaseClock()
        self._trainer = None
        self._entry = None  # the LoopEntry, while waiting or running
        self._patches = None

    def initialize(self, trainer):
        self.release()
        self._trainer = trainer
        self._entry = _loop_entry.LoopEntry.install(
            trainer, self._enter_loop, self.release, self._iteration)

    def _enter_loop(self):
        # The first iteration's start, inside Trainer.run's try.
        self._patches = wrappers.install(self._clock, self._trainer)

    def _iteration(self, trainer):
        # Each iteration's start: the stop trigger said go on.
        if self._patches is not None:
            self._clock.begin(phases.OTHER, in_update=True)
            self.iteration_started(trainer)

    def iteration_started(self, trainer):
        """Called at each iteration's start, once the clock has begun it."""

    def release(self):
        """Takes every wrapper off; safe to call many times."""
        self._clock.stop()
        entry, self._entry = self._entry, None
        if entry is not None:
            entry.discard(self._enter_loop)
        patches, self._patches = self._patches, None
        if patches is not None:
            patches.restore()

    def on_error(self, trainer, exc, tb):
        self.release()

    def finalize(self):
        self.release()

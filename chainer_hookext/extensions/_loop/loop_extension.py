"""The lifecycle shared by the extensions that time the loop's phases.

A :class:`LoopExtension` owns a :class:`~.phases.PhaseClock` and the
wrappers that drive it (:mod:`.wrappers`): they are put on when
``Trainer.run`` enters its loop and taken off when it ends, every way out
(:class:`~chainer_hookext.extensions._loop_entry.LoopEntry`), and each
iteration's start is seen through a stand-in over the trainer's stop
trigger.
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
        self._start = None  # the stop_trigger stand-in, while installed

    def initialize(self, trainer):
        self.release()
        self._trainer = trainer
        # The loop's two ends, as the link hook extensions see them; each
        # iteration's start through a stand-in over the stop trigger.
        self._entry = _loop_entry.LoopEntry.install(
            trainer, self._enter_loop, self.release)
        self._start = _IterationStart(self, trainer)

    def _enter_loop(self):
        # The first iteration's start, inside Trainer.run's try.
        self._patches = wrappers.install(self._clock, self._trainer)

    def iteration_started(self, trainer):
        """Called at each iteration's start, once the clock has begun it."""

    def release(self):
        """Takes every wrapper off; safe to call many times."""
        self._clock.stop()
        entry, self._entry = self._entry, None
        if entry is not None:
            entry.discard(self._enter_loop)
        start, self._start = self._start, None
        if start is not None:
            start.remove()
        patches, self._patches = self._patches, None
        if patches is not None:
            patches.restore()

    def on_error(self, trainer, exc, tb):
        self.release()

    def finalize(self):
        self.release()


class _IterationStart(object):
    """Stands in for ``trainer.stop_trigger``: marks each iteration's start.

    ``Trainer.run`` binds ``stop_trigger`` after the extensions'
    ``initialize`` and calls it before each update.  Everything else is
    forwarded to the trigger it stands over (a
    :class:`~chainer_hookext.extensions._loop_entry.LoopEntry`, which sees
    the loop's entry and end).
    """

    def __init__(self, owner, trainer):
        self.owner = owner
        self.trainer = trainer
        self.stop_trigger = trainer.stop_trigger
        trainer.stop_trigger = self

    def __call__(self, trainer):
        owner = self.owner
        owner._clock.stop()
        if self.stop_trigger(trainer):
            return True
        if owner._patches is not None:  # the loop runs
            owner._clock.begin(phases.OTHER, in_update=True)
            owner.iteration_started(trainer)
        return False

    def __getattr__(self, name):
        trigger = self.__dict__.get('stop_trigger')
        if name.startswith('__') or trigger is None:
            raise AttributeError(name)
        return getattr(trigger, name)

    def remove(self):
        """Puts the trainer's stop trigger back, if still ours."""
        if vars(self.trainer).get('stop_trigger') is not self:
            return
        trigger = self.stop_trigger
        if isinstance(trigger, _loop_entry.LoopEntry) and not trigger.waiting:
            trigger = trigger.trigger  # its loop ended: the trainer's own
        self.trainer.stop_trigger = trigger

"""Which part of a training iteration runs: the update, an ``Evaluator``.

While a callback listens, the triggers of a few entries are stood in for
by a :class:`_ConsultedTrigger` within one iteration (docs/internals.md,
"What the package sets"; costs in benchmarks/README.md).
"""

import weakref

from chainer.training.extensions import evaluator as evaluator_module

from chainer_hookext import _chainer
from chainer_hookext import _copies


class IterationParts:
    """Which part of one trainer's iterations runs: ``in_update`` and
    ``evaluator`` (the ``Evaluator`` called), exact only while a callback
    is added; else ``in_update`` lasts to the iteration's end."""

    in_update = False
    evaluator = None
    #: The loop's ``PhaseMarks`` while they run: the timers give them their
    #: clock reads, so that phases and link spans align.
    phase_marks = None

    def __init__(self, trainer):
        self._trainer = ((lambda: None) if trainer is None
                         else weakref.ref(trainer))
        self._callbacks = []
        self._stand_ins = None  # the loop's _ConsultedTriggers
        self._standing = 0  # how many stand in now

    def __reduce__(self):
        return IterationParts, (None,)

    def add_callback(self, callback):
        """Calls ``callback(in_update)`` whenever :attr:`in_update` changes
        (a hot path's own flag is one attribute read less per call)."""
        self._callbacks.append(callback)

    def remove_callback(self, callback):
        """Forgets ``callback``, if there."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def set_phase_reader(self, timer):
        """Gives the phase marks the reads of ``timer`` only (``None``: of
        any) and tells every callback."""
        marks = self.phase_marks
        if marks is None:
            return
        marks.reader = timer
        for callback in list(self._callbacks):
            callback(self.in_update)

    def update_started(self):
        """The update runs until an entry's trigger is consulted."""
        self.evaluator = None
        if not self.in_update:
            self._set_in_update(True)
        if not self._callbacks:  # nobody reads the flags
            return
        if self._stand_ins is None:
            self._stand_ins = _stand_ins(self, self._trainer())
        for stand_in in self._stand_ins:
            stand_in.stand_in()
        self._standing = len(self._stand_ins)

    def iteration_ended(self):
        """Nothing of an iteration runs; every trigger is the entry's own."""
        if self.in_update:  # twice an iteration: a call saved
            self._set_in_update(False)
        self.evaluator = None
        if self._standing:
            self._standing = 0
            for stand_in in self._stand_ins:
                stand_in.put_back()

    def loop_ended(self):
        """Forgets the loop's entries."""
        self.iteration_ended()
        self._stand_ins = None

    def _set_in_update(self, in_update):
        if self.in_update is not in_update:
            self.in_update = in_update
            for callback in list(self._callbacks):
                callback(in_update)


def _stand_ins(parts, trainer):
    # In Trainer.run's order: the first entry, each Evaluator's, the next.
    entries = _chainer.extension_entries(trainer)
    order = sorted(entries.values(), key=lambda e: e.priority, reverse=True)
    is_evaluator = [isinstance(e.extension, evaluator_module.Evaluator)
                    for e in order]
    return [_ConsultedTrigger(parts, entry, is_evaluator[i])
            for i, entry in enumerate(order)
            if i == 0 or is_evaluator[i] or is_evaluator[i - 1]]


class _ConsultedTrigger:
    # An entry's trigger from the update's start until consulted.
    __slots__ = ('parts', 'entry', 'trigger', 'evaluator')

    def __init__(self, parts, entry, is_evaluator):
        self.parts = parts
        self.entry = entry
        self.trigger = None  # the entry's, while this one stands in
        self.evaluator = entry.extension if is_evaluator else None

    def stand_in(self):
        if self.trigger is None:
            self.trigger = self.entry.trigger
            self.entry.trigger = self

    def put_back(self):
        trigger, self.trigger = self.trigger, None
        if trigger is not None and self.entry.trigger is self:
            self.entry.trigger = trigger

    def __call__(self, trainer):
        # put_back and the bookkeeping, inlined: this runs each iteration.
        trigger, self.trigger = self.trigger, None
        entry = self.entry
        if entry.trigger is self:
            entry.trigger = trigger
        parts = self.parts
        parts._standing -= 1
        if parts.in_update:  # the update is over
            parts._set_in_update(False)
        parts.evaluator = None  # and so is the Evaluator's call before
        called = trigger(trainer)
        if called:
            parts.evaluator = self.evaluator
        return called

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return getattr(self.trigger, name)

    def __reduce__(self):
        return _copies.same, (self.trigger,)

"""Where each phase of an iteration starts, seen through Chainer's hook
points (docs/timing.md, "`TimedLoop`: where each iteration goes", the marks).
"""

import collections
import warnings

from chainer import function_hook

from chainer_hookext import _chainer
from chainer_hookext import _copies
from chainer_hookext import _registry
from chainer_hookext.timing import clock
from chainer_hookext.timing import phases


NAME = 'loop_phases'

#: Functions applied after a backward (a forward if a new walk follows):
#: the first's time, the last step's rank, whether an optimizer updated.
Candidate = collections.namedtuple(
    'Candidate', ('start', 'step_rank', 'updated'))


class PhaseMarks(function_hook.FunctionHook):
    """Function hook starting the ``forward`` and ``backward`` phases, and
    ending ``backward`` at its last step; ``count_updates()`` returns the
    sum of the optimizers' ``t``."""

    name = NAME

    def __init__(self, clock, count_updates):
        self.clock = clock
        self.count_updates = count_updates
        self.watch_forward = self.watch_backward = False
        self.after_backward = False  # a forward must be followed by one
        self.steps = 0  # backward steps running
        self.step_end = None
        self.step_rank = 0  # the last step's node's
        self.candidate = None
        self.updates = 0  # count_updates() at the backward's start
        self.warned = False
        # The backward timer's read at read_function's step, until taken.
        self.read_function = self.read_time = None
        self.call_start = None  # the first link call of a forward waited
        self.reader = None  # the timer whose reads are taken; None: any

    # The hot path: one call each per function applied and backward step.
    def forward_preprocess(self, function, in_data):
        if self.watch_forward and not self.steps:
            self._function_applied()

    def backward_preprocess(self, function, in_data, out_grad):
        self.steps += 1
        if self.watch_backward:
            self._step_started(function)
        self.read_function = None

    def backward_postprocess(self, function, in_data, out_grad):
        self.steps -= 1
        if self.read_function is function:  # the timer's read
            self.step_end = self.read_time
            self.read_function = None
        else:
            self.step_end = clock.now()
        self.step_rank = function.rank

    def link_call_started(self, t):
        """An outermost link call started at ``t``: a forward's start."""
        if self.watch_forward and not self.steps and self.call_start is None:
            self.call_start = t

    # Once per phase, not per call: inlined where it saves a call.
    def _function_applied(self):
        self.watch_forward = False
        self.watch_backward = True
        start, self.call_start = self.call_start, None
        if start is None:
            start = clock.now()
        if self.after_backward:
            self.candidate = Candidate(
                start, self.step_rank, self.count_updates() != self.updates)
        else:
            self.switch(phases.FORWARD, start)

    def _step_started(self, function):
        self.watch_backward = False
        self.watch_forward = self.after_backward = True
        self.call_start = None
        start = self.read_time if self.read_function is function else None
        candidate, self.candidate = self.candidate, None
        if candidate is None:  # the first step after a forward
            self.updates = self.count_updates()
            self.switch(phases.BACKWARD, start)
        elif function.rank > candidate.step_rank:
            # A new walk: a walk's nodes come in decreasing rank, so the
            # functions applied before it were its forward.
            end = self.backward_ended()
            if end is not None:
                self.clock.switch(
                    phases.OPTIMIZER if candidate.updated else phases.DATA,
                    end)
            self.clock.switch(phases.FORWARD, candidate.start)
            self.updates = self.count_updates()
            self.clock.switch(phases.BACKWARD, start)

    def backward_ended(self):
        clock = self.clock
        end = self.step_end
        if clock.phase == phases.BACKWARD and end is not None and (
                end >= clock.started):
            return end
        return None

    def switch(self, phase, t=None):
        """Starts ``phase``; the time since the last step is optimizer's."""
        clock = self.clock
        if clock.phase == phases.BACKWARD:
            end = self.backward_ended()
            if end is not None:
                clock.switch(phases.OPTIMIZER, end)
        clock.switch(phase, t)

    def start(self):
        """The update starts, or starts again after ChainerMN's update."""
        self.watch_forward = self.watch_backward = True
        self.after_backward = False
        self.candidate = self.call_start = None
        self.steps = 0

    def stop(self):
        """The update has ended: nothing is looked at until :meth:`start`."""
        candidate = self.candidate
        if candidate is not None and candidate.updated and not self.warned:
            self.warned = True
            warnings.warn(
                'TimedLoop: functions were applied after an optimizer\'s '
                'update, and no backward step followed them (a forward '
                'without backward, to report a loss?): they cannot be told '
                'from the updater\'s own work and count as optimizer, not '
                'forward.', RuntimeWarning)
        self.watch_forward = self.watch_backward = False
        self.candidate = None


class UpdateMark(_registry.OptimizerHook):
    """ChainerMN's multi-node optimizer's first ``pre`` hook."""

    def __init__(self, marks):
        self.marks = marks

    def __call__(self, optimizer):
        marks = self.marks
        if marks is not None and marks.in_update:
            marks.update_started()


class TimedTrigger:
    """An extension entry's trigger that starts the extension's phase;
    forwards every attribute to the trigger (snapshots unchanged)."""

    def __init__(self, marks, trigger, phase):
        self.marks = marks
        self.trigger = trigger
        self.phase = phase

    def __call__(self, trainer):
        marks = self.marks
        if marks is None:
            return self.trigger(trainer)
        marks.outside_update(self.phase)
        called = self.trigger(trainer)
        if not called:
            marks.clock.makes_span = False
        return called

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        try:  # not vars(self): its attributes would move into a dict
            trigger = object.__getattribute__(self, 'trigger')
        except AttributeError:
            raise AttributeError(name) from None
        return getattr(trigger, name)

    def __reduce__(self):
        return _copies.same, (self.trigger,)


class Marks:
    """Every mark of one trainer's loop, on one ``PhaseClock``."""

    def __init__(self, clock):
        self.clock = clock
        self.in_update = False
        self.phase_marks = None  # the PhaseMarks, once added
        self._hook_handle = None
        self._optimizer_hooks = []
        self._triggers = []  # (extension entry, TimedTrigger)

    def add(self, trainer, function_hooks):
        """Registers the marks on ``trainer``'s loop."""
        try:
            optimizers = tuple(trainer.updater.get_all_optimizers().values())
            for optimizer in optimizers:
                # ChainerMN's multi-node optimizer has a communicator (not
                # vars(optimizer): its attributes would move into a dict,
                # each later read slower).  First: the user's pre hooks are
                # optimizer's.
                if getattr(optimizer, 'communicator', None) is not None:
                    self._optimizer_hooks.append(_registry.add_optimizer_hook(
                        optimizer, UpdateMark(self), NAME, 'pre', first=True))

            def count_updates():  # a loop, not sum(): no generator
                total = 0
                for optimizer in optimizers:
                    total += optimizer.t
                return total
            self.phase_marks = PhaseMarks(self.clock, count_updates)
            self._hook_handle = _registry.add(function_hooks, self.phase_marks)
            for name, entry in _chainer.extension_entries(trainer).items():
                timed = TimedTrigger(
                    self, entry.trigger, phases.ExtensionPhase(name))
                entry.trigger = timed
                self._triggers.append((entry, timed))
        except BaseException:
            self.remove()
            raise

    def remove(self):
        """Removes every mark added; safe to call again."""
        self.in_update = False
        for entry, timed in self._triggers:
            timed.marks = None
            if entry.trigger is timed:
                entry.trigger = timed.trigger
        self._triggers = []
        handles, self._optimizer_hooks = self._optimizer_hooks, []
        for handle in handles:
            handle[-1].marks = None
            _registry.remove_optimizer_hook(handle)
        hook, self.phase_marks = self.phase_marks, None
        if hook is not None:
            _registry.remove(self._hook_handle, hook)

    def iteration_started(self):
        self.in_update = True
        hook = self.phase_marks
        hook.start()
        hook.step_end = None
        self.clock.switch(phases.DATA)

    def outside_update(self, phase):
        """Starts ``phase`` (an extension's, the stop trigger's)."""
        self.in_update = False
        hook = self.phase_marks
        if hook.watch_forward or hook.watch_backward:
            hook.stop()
        hook.switch(phase)

    def update_started(self):
        # ChainerMN's update starts, after its all-reduce.
        hook = self.phase_marks
        end = hook.backward_ended()
        if end is not None:
            self.clock.switch(phases.ALLREDUCE, end)
        hook.switch(phases.OPTIMIZER)
        hook.start()

"""Where each phase of an iteration starts, seen through Chainer's hook
points: nothing of the user's is replaced.

==========================================  ================================
mark                                        phase started
==========================================  ================================
the iteration's start (the stop trigger     ``data``
said go on)
the first function applied in the update    ``forward``
after the start or an optimizer's update
(a function hook's ``forward_preprocess``)
the first backward step after a forward     ``backward``
(the function hook's
``backward_preprocess``)
the next mark after a backward              ``optimizer``, from the last
                                            backward step's end
an optimizer's ``pre`` hooks (ours first),  ``optimizer``; under ChainerMN
with several optimizers or ChainerMN only   the time from the last
                                            backward step is ``allreduce``
an extension's trigger (the trainer's       ``extension/<name>``: its
extension entry)                            trigger and call
the stop trigger                            ``other``
==========================================  ================================

Functions applied inside a backward step (``F.forget`` recomputing its
forward, double backpropagation) stay ``backward``.  The function hook is
registered in the training thread only, from the loop's start to its end;
outside the update it only returns.  A copy or a pickle of a multi-node
optimizer holds, for our hook, one that does nothing
(:class:`~chainer_hookext._registry.OptimizerHook`).
"""

from chainer import function_hook

from chainer_hookext import _chainer
from chainer_hookext import _registry
from chainer_hookext.timing import clock
from chainer_hookext.timing import phases


#: The name of every mark's registration, after ``chainer_hookext.``.
NAME = 'loop_phases'


class PhaseMarks(function_hook.FunctionHook):
    """Function hook starting the ``forward`` and ``backward`` phases, and
    ending ``backward`` at its last step.

    Args:
        clock (~.phases.PhaseClock): The clock to switch.
    """

    name = NAME

    def __init__(self, clock):
        self.clock = clock
        self.watch_forward = False  # a function applied starts forward
        self.watch_backward = False  # a backward step starts backward
        self.steps = 0  # backward steps running
        self.step_end = None  # when the last backward step ended

    def forward_preprocess(self, function, in_data):
        if self.watch_forward and not self.steps:
            self.watch_forward = False
            self.watch_backward = True
            self.switch(phases.FORWARD)

    def backward_preprocess(self, function, in_data, out_grad):
        self.steps += 1
        if self.watch_backward:
            # Functions applied after a backward (ParallelUpdater's
            # addgrads) are not a forward: only an optimizer's update
            # (UpdateMark) watches for a forward again.
            self.watch_backward = self.watch_forward = False
            self.clock.switch(phases.BACKWARD)

    def backward_postprocess(self, function, in_data, out_grad):
        self.steps -= 1
        self.step_end = clock.now()

    def backward_ended(self):
        """When the running ``backward`` ended (its last step's end), or
        ``None`` when no ``backward`` runs or no step of it has ended."""
        clock = self.clock
        end = self.step_end
        if clock.phase == phases.BACKWARD and end is not None and (
                end >= clock.started):
            return end
        return None

    def switch(self, phase):
        """Starts ``phase``; a ``backward`` running ends at its last step,
        the time since is ``optimizer``."""
        end = self.backward_ended()
        if end is not None:
            self.clock.switch(phases.OPTIMIZER, end)
        self.clock.switch(phase)

    def watch(self, update):
        """Watches for forward and backward (``update``) or for nothing."""
        self.watch_forward = self.watch_backward = update
        self.steps = 0


class UpdateMark(_registry.OptimizerHook):
    """An optimizer's first ``pre`` hook: its update starts.

    Added only where it is needed, to an updater with several optimizers (a
    GAN: after one optimizer's update, the next loss is ``forward``) and to
    ChainerMN's multi-node optimizer (the time from the last backward step
    to its update is ``allreduce``).  Chainer's
    ``GradientMethod.call_hook`` runs ``reallocate_cleared_grads()``, a walk
    over every parameter, after each hook: that costs more than the rest of
    ``TimedLoop`` (``benchmarks/README.md``).

    Args:
        marks (Marks): What it tells.
        multi_node (bool): Whether the optimizer all-reduces the gradients
            before its update.
    """

    def __init__(self, marks, multi_node):
        self.marks = marks
        self.multi_node = multi_node

    def __call__(self, optimizer):
        marks = self.marks
        if marks is not None and marks.in_update:
            marks.update_started(self.multi_node)


class TimedTrigger(object):
    """An extension entry's trigger that starts the extension's phase.

    Forwards everything else (``serialize``, ``finished`` ...) to the
    trigger, so snapshots are unchanged.  Passes through once the loop has
    ended (:attr:`marks` is ``None``).
    """

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
            marks.clock.no_span()
        return called

    def __getattr__(self, name):
        trigger = vars(self).get('trigger')
        if trigger is None or name.startswith('__'):
            raise AttributeError(name)
        return getattr(trigger, name)


class Marks(object):
    """Every mark of one trainer's loop, on one :class:`~.phases.PhaseClock`.

    :meth:`add` registers them, :meth:`remove` removes exactly them.

    Attributes:
        clock (~.phases.PhaseClock): The clock they switch.
        in_update (bool): Whether the update is running.
    """

    def __init__(self, clock):
        self.clock = clock
        self.in_update = False
        self._hook = None
        self._hook_handle = None
        self._optimizer_hooks = []  # handles
        self._triggers = []  # (extension entry, TimedTrigger)

    def add(self, trainer, function_hooks):
        """Registers the marks on ``trainer``'s loop.

        Args:
            trainer (~chainer.training.Trainer): Whose loop to mark.
            function_hooks (dict): The training thread's function hooks
                (``chainer.get_function_hooks()``).
        """
        try:
            self._add(trainer, function_hooks)
        except BaseException:
            self.remove()
            raise

    def _add(self, trainer, function_hooks):
        optimizers = trainer.updater.get_all_optimizers().values()
        for optimizer in optimizers:
            # ChainerMN's multi-node optimizer keeps its communicator in
            # its own __dict__ (chainermn/optimizers.py).  Ours first among
            # the pre hooks: the user's (WeightDecay ...) are optimizer time.
            multi_node = 'communicator' in vars(optimizer)
            if multi_node or len(optimizers) > 1:
                self._optimizer_hooks.append(_registry.add_optimizer_hook(
                    optimizer, UpdateMark(self, multi_node), NAME,
                    'pre', first=True))
        self._hook = PhaseMarks(self.clock)
        self._hook_handle = _registry.add(function_hooks, self._hook)
        for name, entry in _chainer.extension_entries(trainer).items():
            timed = TimedTrigger(
                self, entry.trigger, phases.ExtensionPhase(name))
            entry.trigger = timed
            self._triggers.append((entry, timed))

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
        hook, self._hook = self._hook, None
        if hook is not None:
            _registry.remove(self._hook_handle, hook)

    def iteration_started(self):
        """Starts ``data``: the update begins."""
        self.in_update = True
        hook = self._hook
        hook.watch(True)
        hook.step_end = None
        self.clock.switch(phases.DATA)

    def outside_update(self, phase):
        """Starts ``phase`` of the loop (an extension, the stop trigger)."""
        self.in_update = False
        hook = self._hook
        if hook.watch_forward or hook.watch_backward:
            hook.watch(False)
        hook.switch(phase)

    def update_started(self, multi_node):
        """An optimizer's update starts (after its all-reduce)."""
        hook = self._hook
        end = hook.backward_ended()
        if multi_node and end is not None:
            self.clock.switch(phases.ALLREDUCE, end)
        hook.switch(phases.OPTIMIZER)
        hook.watch(True)  # the next loss's forward and backward

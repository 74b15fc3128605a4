"""Where each phase of an iteration starts, seen through Chainer's hook
points: nothing of the user's is replaced.

==========================================  ================================
mark                                        phase started
==========================================  ================================
the iteration's start (the stop trigger     ``data``
said go on)
the first function applied in the update    ``forward``
after the start, an optimizer's update or
a backward (a function hook's
``forward_preprocess``)
the first backward step after a forward     ``backward``
(the function hook's
``backward_preprocess``)
an optimizer's ``pre`` hooks (ours first)   ``optimizer``; under ChainerMN
                                            the time from the last backward
                                            step to there is ``allreduce``
an optimizer's ``post`` hooks (ours last)   ``other``
an extension's trigger (the trainer's       ``extension/<name>``: its
extension entry)                            trigger and call
the stop trigger                            ``other``
==========================================  ================================

Functions applied inside a backward step (``F.forget`` recomputing its
forward, double backpropagation) stay ``backward``.  The function hook is
registered in the training thread only, from the loop's start to its end;
outside the update it only returns.  A copy or a pickle of an optimizer
holds, for each optimizer hook, one that does nothing
(:class:`~chainer_hookext._registry.OptimizerHook`).
"""

from chainer import function_hook

from chainer_hookext import _registry
from chainer_hookext.extensions._loop import phases


class PhaseMarks(function_hook.FunctionHook):
    """Function hook starting the ``forward`` and ``backward`` phases.

    Args:
        clock (~.phases.PhaseClock): The clock to switch.
        step_ends (bool): Record each backward step's end
            (:attr:`step_end`), for ``allreduce``.
    """

    name = 'loop_phases'  # Marks.NAME

    def __init__(self, clock, step_ends=False):
        self.clock = clock
        self.watch_forward = False  # a function applied starts forward
        self.watch_backward = False  # a backward step starts backward
        self.steps = 0  # backward steps running
        self.step_ends = step_ends
        self.step_end = None

    def forward_preprocess(self, function, in_data):
        if self.watch_forward and not self.steps:
            self.watch_forward = False
            self.watch_backward = True
            self.clock.switch(phases.FORWARD)

    def backward_preprocess(self, function, in_data, out_grad):
        self.steps += 1
        if self.watch_backward:
            self.watch_backward = False
            self.watch_forward = True  # a second loss's forward
            self.clock.switch(phases.BACKWARD)

    def backward_postprocess(self, function, in_data, out_grad):
        self.steps -= 1
        if self.step_ends:
            self.step_end = phases._perf_counter()

    def watch(self, update):
        """Watches for forward and backward (``update``) or for nothing."""
        self.watch_forward = self.watch_backward = update
        self.steps = 0
        self.step_end = None


class OptimizerMark(_registry.OptimizerHook):
    """Optimizer hook switching the clock, once per update.

    Args:
        marks (Marks): What it tells.
        pre (bool): ``True`` for the ``pre`` hook, ``False`` for ``post``.
        multi_node (bool): Whether the optimizer all-reduces its gradients
            before its ``pre`` hooks (ChainerMN's multi-node optimizer).
    """

    def __init__(self, marks, pre, multi_node=False):
        self.marks = marks
        self.pre = pre
        self.multi_node = multi_node

    def __call__(self, optimizer):
        marks = self.marks
        if marks is not None and marks.in_update:
            marks.optimizer_mark(self)


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

    #: The name of every mark's registration, after ``chainer_hookext.``.
    NAME = 'loop_phases'

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
        multi_node = []
        for optimizer in trainer.updater.get_all_optimizers().values():
            # ChainerMN's multi-node optimizer keeps its communicator in
            # its own __dict__ (chainermn/optimizers.py).
            node = 'communicator' in vars(optimizer)
            multi_node.append(node)
            for pre in (True, False):
                # Ours first among the pre hooks: the user's (WeightDecay
                # ...) are optimizer time.
                self._optimizer_hooks.append(_registry.add_optimizer_hook(
                    optimizer, OptimizerMark(self, pre, node), self.NAME,
                    'pre' if pre else 'post', first=pre))
        self._hook = PhaseMarks(self.clock, step_ends=any(multi_node))
        self._hook_handle = _registry.add(function_hooks, self._hook)
        # Trainer keeps its extension entries in ``_extensions``.
        for name, entry in trainer._extensions.items():
            timed = TimedTrigger(self, entry.trigger, phases.EXTENSION + name)
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
        self._hook.watch(True)
        self.clock.switch(phases.DATA)

    def outside_update(self, phase):
        """Starts ``phase`` of the loop (an extension, the stop trigger)."""
        self.in_update = False
        self._hook.watch(False)
        self.clock.switch(phase)

    def optimizer_mark(self, hook):
        """An optimizer's ``pre`` or ``post`` hook is called."""
        clock = self.clock
        if not hook.pre:
            self._hook.watch(True)
            clock.switch(phases.OTHER)
            return
        step_end = self._hook.step_end
        if (hook.multi_node and clock.phase == phases.BACKWARD
                and step_end is not None and step_end >= clock.started):
            clock.switch(phases.ALLREDUCE, step_end)
        self._hook.watch(False)
        clock.switch(phases.OPTIMIZER)

"""The trainer extension naming the first link to produce NaN or Inf
(docs/debugging.md, "`NonFiniteGuard`")."""

import typing

from chainer import reporter
from chainer.training import extension

from chainer_hookext import _checks
from chainer_hookext import _registry
from chainer_hookext import _running_links
from chainer_hookext.link_hooks import non_finite
from chainer_hookext.report import keys
from chainer_hookext.run import link_hook_extension
from chainer_hookext.run import training_loop


class NonFiniteGuard(link_hook_extension.LinkHookExtension):
    """Trainer extension that stops at the first link to produce NaN or Inf.

    Checks forward outputs, gradients in backward and parameters'
    gradients, and raises :class:`~chainer_hookext.NonFiniteError` at the
    first non-finite value (docs/debugging.md, "`NonFiniteGuard`").

    Args:
        links (~chainer.Link or list of ~chainer.Link): Sub-trees to check;
            ``None`` checks the ``main`` optimizer's target.
        action (str): ``'raise'``, ``'warn'`` or ``'report'``, see
            :class:`~chainer_hookext.link_hooks.NonFiniteHook`.
        backward (bool): Also check gradients in backward.
        train (bool): Check in training mode.
        eval (bool): Check in evaluation mode.

    .. admonition:: Example

        >>> from chainer_hookext import NonFiniteGuard
        >>> trainer.extend(NonFiniteGuard())
    """

    trigger = 1, 'iteration'
    priority = extension.PRIORITY_EDITOR
    default_name = 'non_finite_guard'

    def __init__(self, links: typing.Any = None, *, action: str = 'raise',
                 backward: bool = True, train: bool = True,
                 eval: bool = True) -> None:
        call = type(self).__name__
        train, eval = _checks.check_modes(call, train, eval)
        non_finite.check_action(call, action)
        backward = _checks.check_flag(call, 'backward', backward)
        hook = non_finite.NonFiniteHook(
            backward=backward, action=action, train=train, eval=eval)
        super().__init__(hook, links, train=train, eval=eval)
        self._grads_entry = None
        self._grads_optimizers = []
        self._grads_added = []

    @property
    def findings(self):
        """First finding at each place: list of ``NonFiniteError``."""
        return self.hook.findings

    def initialize(self, trainer):
        super().initialize(trainer)
        self.hook.updater = trainer.updater
        if not self.hook.backward or self.hook.config_train is False:
            return
        names = self.hook.link_names
        self._grads_optimizers = [
            optimizer
            for optimizer in trainer.updater.get_all_optimizers().values()
            if any(id(link) in names for link in optimizer.target.links())]
        # Added when the loop starts: initialize is outside Trainer.run's try.
        self._grads_entry = training_loop.TrainingLoop.install(
            trainer, self._add_grad_checks, self._remove_grad_checks)

    def _add_grad_checks(self):
        optimizers, self._grads_optimizers = self._grads_optimizers, []
        for optimizer in optimizers:
            self._grads_added.append(_registry.add_optimizer_hook(
                optimizer, _GradientCheck(self.hook), type(self).__name__,
                'pre'))

    def _remove_grad_checks(self):
        added, self._grads_added = self._grads_added, []
        for handle in added:
            handle[-1].hook = None
            _registry.remove_optimizer_hook(handle)

    def release(self):
        """Removes the hooks and forgets the loop; safe to call again."""
        super().release()
        entry, self._grads_entry = self._grads_entry, None
        self._grads_optimizers = []
        if entry is not None:
            entry.discard(self._add_grad_checks)
        self._remove_grad_checks()

    def __call__(self, trainer):
        _running_links.drop_calls_left_open()
        self.hook.check()
        counts = self.hook.pop_counts()
        if counts:
            reporter.report({keys.non_finite_key(link, what): n
                             for (link, what), n in counts.items()})

    def on_error(self, trainer, exc, tb):
        self.hook.discard()
        super().on_error(trainer, exc, tb)

    def finalize(self):
        super().finalize()
        self.hook.updater = None


class _GradientCheck(_registry.OptimizerHook):
    def __init__(self, hook):
        self.hook = hook

    def __call__(self, optimizer):
        if self.hook is not None:
            self.hook.check_grads(optimizer.target)

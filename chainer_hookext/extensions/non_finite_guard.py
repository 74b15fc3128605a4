from chainer import reporter
from chainer.training import extension

from chainer_hookext import _modes
from chainer_hookext.extensions import link_hook_extension
from chainer_hookext.link_hooks import non_finite


class NonFiniteGuard(link_hook_extension.LinkHookExtension):
    """Trainer extension that stops at the first link to produce NaN or Inf.

    Owns a :class:`~chainer_hookext.link_hooks.NonFiniteHook` for the length
    of training.  Each floating-point forward output of the hooked links and,
    with ``backward=True``, each gradient flowing into a function created in
    their forward is checked; the first non-finite one raises
    :class:`~chainer_hookext.NonFiniteError`, naming the link
    (``main/predictor/l1``), the iteration, forward or backward, and which
    output.  On CPU the error is raised from the culprit's call; on GPU the
    checks leave device flags that this extension reads once per iteration
    (one synchronisation), then names the first culprit in call order.

    With ``action='warn'`` or ``'report'`` training goes on, and the number
    of non-finite arrays found in an iteration is reported as
    ``<link>/out/non_finite`` (forward) and ``<link>/grad/non_finite``
    (backward), for links that had some.

    The extension runs every iteration at ``PRIORITY_EDITOR``: after
    :class:`~chainer.training.extensions.Evaluator` (whose forward passes are
    checked when ``eval=True``) and before ``LogReport``.

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

    def __init__(self, links=None, *, action='raise', backward=True,
                 train=True, eval=True):
        _modes.check_modes('NonFiniteGuard', train, eval)
        non_finite.check_action('NonFiniteGuard', action)
        hook = non_finite.NonFiniteHook(
            backward=backward, action=action, train=train, eval=eval)
        super().__init__(hook, links, train=train, eval=eval)

    @property
    def findings(self):
        """First finding at each place: list of ``NonFiniteError``."""
        return self.hook.findings

    def initialize(self, trainer):
        super().initialize(trainer)
        self.hook.updater = trainer.updater

    def __call__(self, trainer):
        self.hook.active.reset()
        self.hook.check()
        counts = self.hook.pop_counts()
        if counts:
            reporter.report({'{}/{}/non_finite'.format(link, what): n
                             for (link, what), n in counts.items()})

    def on_error(self, trainer, exc, tb):
        # Training is failing already: forget unread device flags.
        self.hook.discard()
        super().on_error(trainer, exc, tb)

    def finalize(self):
        super().finalize()
        self.hook.updater = None

"""CaptureOutputs: the latest outputs of chosen links, in a trainer
(docs/debugging.md, "`CaptureOutputs`")."""

import sys

from chainer.training import extension

from chainer_hookext import _checks
from chainer_hookext.link_hooks import capture_outputs
from chainer_hookext.run import link_hook_extension


class CaptureOutputs(link_hook_extension.LinkHookExtension):
    """Trainer extension that keeps the latest output of chosen links.

    :attr:`outputs` maps each chosen link's name (``main/predictor/l1``)
    to its latest detached output (docs/debugging.md, "`CaptureOutputs`").

    Args:
        links (~chainer.Link or list of ~chainer.Link): The links whose
            outputs to keep (not their children); ``None``: every link of
            the ``main`` optimizer's target.
        callback (callable): ``callback(trainer, outputs)`` at the trigger.
        keep (bool or str): After training: ``False`` drops the outputs,
            ``True`` keeps them, ``'on_error'`` only when training raised.
        copy (bool): Keep copies of the arrays.
        train (bool): Capture in training mode.
        eval (bool): Capture in evaluation mode.

    .. admonition:: Example

        >>> from chainer_hookext import CaptureOutputs
        >>> capture = CaptureOutputs(model.predictor.l1, keep=True)
        >>> trainer.extend(capture)
        >>> trainer.run()
        >>> capture.outputs['main/predictor/l1'].shape
        (8, 8)
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_READER
    default_name = 'capture_outputs'

    def __init__(self, links=None, *, callback=None, keep=False, copy=False,
                 train=True, eval=False):
        call = type(self).__name__
        if callback is not None and not callable(callback):
            raise TypeError(
                f'`{call}(callback={callback!r})` is not callable: pass '
                'callback(trainer, outputs) or None.')
        keep = _checks.check_choice(
            call, 'keep', keep, (False, True, 'on_error'),
            'a choice (False drops the outputs after training)')
        copy = _checks.check_flag(call, 'copy', copy)
        train, eval = _checks.check_modes(call, train, eval)
        hook = capture_outputs.CaptureOutputsHook(
            copy=copy, train=train, eval=eval)
        super().__init__(hook, links, train=train, eval=eval)
        self.callback = callback
        self.keep = keep
        self._failed = False
        self._outer_error = None

    @property
    def outputs(self):
        """``{link name: latest detached output}``."""
        return self.hook.outputs

    def scope_link_names(self, trainer):
        """Returns ``{id(link): name}`` of the chosen links only."""
        names = super().scope_link_names(trainer)
        if self.links is None:
            return names
        return {id(link): names[id(link)] for link in self.links}

    def initialize(self, trainer):
        super().initialize(trainer)
        self.hook.clear()
        self._failed = False
        # The caller's exception in hand is not the run's (its id only).
        self._outer_error = id(sys.exc_info()[1])

    def __call__(self, trainer):
        if self.callback is not None:
            self.callback(trainer, dict(self.hook.outputs))

    def on_error(self, trainer, exc, tb):
        self._failed = True
        super().on_error(trainer, exc, tb)

    def finalize(self):
        super().finalize()
        if self.keep == 'on_error' and not self._failed:
            # An exception in flight (KeyboardInterrupt gets no on_error).
            error = sys.exc_info()[1]
            self._failed = (error is not None
                            and id(error) != self._outer_error)
        if not (self.keep is True
                or (self.keep == 'on_error' and self._failed)):
            self.hook.clear()

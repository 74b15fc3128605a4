"""CaptureOutputsHook: the latest forward output of each link
(docs/debugging.md, "`CaptureOutputs`")."""

import chainer

from chainer_hookext import _checks
from chainer_hookext.link_hooks import _output_hook


class CaptureOutputsHook(_output_hook.OutputHook):
    """Link hook that keeps the latest forward output of each hooked link.

    Outputs are kept off the graph (Variables as their arrays), one per
    link until :meth:`clear`; without a scope links are named after their
    parents (``MLP/l1``).

    Args:
        copy (bool): Keep a copy of each array (against in-place writes).
        train (bool): Capture while ``chainer.config.train`` is true.
        eval (bool): Capture while ``chainer.config.train`` is false.

    Attributes:
        outputs (dict): ``{link name: latest output}``.

    .. admonition:: Example

        >>> from chainer_hookext import CaptureOutputsHook
        >>> hook = CaptureOutputsHook()
        >>> with hook:
        ...     _ = L.Linear(2, 1, initialW=1, nobias=True)(
        ...         numpy.array([[1, 2]], numpy.float32))
        >>> hook.outputs
        {'Linear': array([[3.]], dtype=float32)}
    """

    name = 'CaptureOutputsHook'

    def __init__(self, *, copy=False, train=True, eval=False):
        copy = _checks.check_flag(type(self).__name__, 'copy', copy)
        super().__init__(train=train, eval=eval)
        self.copy = copy
        self.outputs = {}

    def process(self, name, args):
        self.outputs[name] = detach(args.out, self.copy)

    def clear(self):
        """Forgets every captured output."""
        self.outputs = {}


def detach(out, copy=False):
    """``out`` with Variables as their arrays (copied if ``copy``)."""
    if isinstance(out, chainer.Variable):
        out = out.array
    if isinstance(out, chainer.get_array_types()):
        return out.copy() if copy else out
    if isinstance(out, (tuple, list)):
        items = [detach(x, copy) for x in out]
        if hasattr(out, '_fields'):  # a namedtuple
            return type(out)(*items)
        return type(out)(items)
    if isinstance(out, dict):
        return {k: detach(v, copy) for k, v in out.items()}
    return out

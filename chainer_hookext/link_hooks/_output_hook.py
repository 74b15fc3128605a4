"""Base of the debugging hooks: scoped links' forward outputs, by name."""

import chainer
import numpy
from chainer import backend

from chainer_hookext import _modes
from chainer_hookext import _node_links
from chainer_hookext.link_hooks import scoped_link_hook


class OutputHook(scoped_link_hook.ScopedLinkHook):
    """Calls :meth:`process` with each scoped link's name after its forward.

    Names come from the scope (:meth:`set_scope`, as
    :class:`~chainer_hookext.LinkHookExtension` sets it: ``main/predictor/l1``)
    or, without a scope, from the stack of running links
    (:class:`~chainer_hookext._node_links.ActiveLinks`: ``MLP/l1``).  The
    stack is kept only when needed: without a scope, or when
    :attr:`track_links` is true (for function-node tagging).  With a scope
    and no tracking, ``forward_preprocess`` does nothing.

    Subclasses implement ``process(name, args)``, where ``args`` is the
    ``forward_postprocess`` argument (``args.out``, ``args.args``,
    ``args.kwargs``, ``args.link``).
    """

    track_links = False

    def __init__(self, train=True, eval=True):
        _modes.check_modes(type(self).__name__, train, eval)
        self.active = _node_links.ActiveLinks()
        self.set_scope(None, train=train, eval=eval)

    def set_scope(self, link_names=None, train=True, eval=True):
        super().set_scope(link_names, train=train, eval=eval)
        self._stacked = self.track_links or self.link_names is None
        self.active.reset()

    def forward_preprocess(self, args):
        if not self._stacked:
            return
        link = args.link
        names = self.link_names
        name = None
        if names is not None:
            name = names.get(id(link))
            if name is None:
                return
        mode = self.mode
        if mode is None or mode == _modes.is_train():
            self.active.enter(link, name)

    def forward_postprocess(self, args):
        if self._stacked:
            name = self.active.leave(args.link)
            if name is None:
                return
        else:
            name = self.link_names.get(id(args.link))
            if name is None:
                return
            mode = self.mode
            if mode is not None and mode != _modes.is_train():
                return
        self.process(name, args)

    def process(self, name, args):
        raise NotImplementedError


def walk(out, keys=()):
    """Yields ``(keys, array)`` for each array in a link's output.

    ``out`` may be a :class:`~chainer.Variable`, an array, or tuples, lists
    and dicts of them; ``keys`` is the path of indices and dict keys to the
    array, ``()`` for a single output.  Anything else is skipped.
    """
    if isinstance(out, chainer.Variable):
        yield keys, out.array
    elif isinstance(out, chainer.get_array_types()):
        yield keys, out
    elif isinstance(out, (tuple, list)):
        for i, item in enumerate(out):
            yield from walk(item, keys + (i,))
    elif isinstance(out, dict):
        for key, item in out.items():
            yield from walk(item, keys + (key,))


def to_host(values):
    """Returns ``values`` with device arrays copied to NumPy.

    Device arrays of one device must share a shape: they are stacked and
    copied at once (one synchronisation per device).  Other values are
    returned as they are.
    """
    out = list(values)
    groups = {}
    for i, value in enumerate(out):
        if (isinstance(value, chainer.get_array_types())
                and not isinstance(value, numpy.ndarray)):
            groups.setdefault(
                backend.get_device_from_array(value), []).append(i)
    for device, indexes in groups.items():
        with chainer.using_device(device):
            stacked = device.xp.stack([out[i] for i in indexes])
        for i, value in zip(indexes, backend.CpuDevice().send(stacked)):
            out[i] = value
    return out

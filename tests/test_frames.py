"""The one recovery from a forward that raised: which calls still run."""

import chainer

from chainer_hookext import _frames


class Asking(chainer.Link):
    """Asks, inside its forward, how many of ``keys`` still run."""

    def __init__(self, keys):
        super().__init__()
        self.keys = keys
        self.kept = None

    def forward(self, x):
        self.kept = _frames.still_running(self.keys, skip_current=False)
        return x


def test_calls_whose_link_call_ended_are_not_kept():
    ended = chainer.Link()  # its call is on the stack, its frame is not
    inner = Asking(None)
    outer = chainer.Chain()
    with outer.init_scope():
        outer.inner = inner
    outer.forward = inner  # an instance attribute: Link.__call__ calls it

    inner.keys = [outer, inner]
    outer(0)
    assert inner.kept == 2
    inner.keys = [outer, ended, inner]
    outer(0)
    assert inner.kept == 1
    inner.keys = [chainer.Chain, inner]  # a call keyed by the link's class
    outer(0)
    assert inner.kept == 2

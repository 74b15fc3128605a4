import gc
import weakref

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext import _node_links
from tests.conftest import MLP


def test_enter_derives_names_from_parents():
    model = MLP()
    active = _node_links.ActiveLinks()
    assert active.enter(model) == 'MLP'
    assert active.enter(model.l1) == 'MLP/l1'
    assert active.names == ('MLP', 'MLP/l1')
    assert active.leave(model.l1) == 'MLP/l1'
    assert active.leave(model) == 'MLP'
    assert active.names == ()
    # A child called on its own is named after itself.
    assert active.enter(model.l2) == 'l2'


def test_enter_keeps_given_name():
    active = _node_links.ActiveLinks()
    link = L.Linear(2, 2)
    assert active.enter(link, 'main/predictor/l1') == 'main/predictor/l1'
    assert active.names == ('main/predictor/l1',)


def test_leave_a_link_not_entered():
    active = _node_links.ActiveLinks()
    outer, other = L.Linear(2, 2), L.Linear(2, 2)
    active.enter(outer, 'outer')
    assert active.leave(other) is None
    assert active.names == ('outer',)


def test_leave_drops_entries_left_by_a_raising_forward():
    active = _node_links.ActiveLinks()
    a, b, c = L.Linear(2, 2), L.Linear(2, 2), L.Linear(2, 2)
    active.enter(a, 'a')
    active.enter(b, 'b')  # b's forward raised: never left
    active.enter(c, 'c')
    assert active.leave(a) == 'a'
    assert active.names == ()
    active.enter(a, 'a')
    active.reset()
    assert active.names == () and active.leave(a) is None


class Recorder(_node_links.NodeTagger):
    """The reuse pattern: read the tags in backward."""

    def __init__(self, active):
        super().__init__(active, name='Recorder')
        self.backward = []

    def backward_preprocess(self, function, in_data, out_grad):
        self.backward.append((function.label, self.links_of(function)))


def run_tagged(model, x):
    # What a link hook does: enter/leave around each link's forward.
    active = _node_links.ActiveLinks()
    tagger = Recorder(active)

    class Hook(chainer.LinkHook):
        def forward_preprocess(self, args):
            active.enter(args.link)

        def forward_postprocess(self, args):
            active.leave(args.link)

    tagger.register()
    try:
        with Hook():
            loss = F.sum(model(x))
        loss.backward()
    finally:
        tagger.unregister()
    return tagger, loss


def test_tags_nodes_with_links_outermost_first():
    model = MLP()
    tagger, loss = run_tagged(model, numpy.ones((2, 4), numpy.float32))
    assert tagger.backward == [
        ('Sum', ()),  # created outside every link
        ('LinearFunction', ('MLP', 'MLP/l2')),
        ('ReLU', ('MLP',)),
        ('LinearFunction', ('MLP', 'MLP/l1')),
    ]
    assert tagger.links_of(loss.creator) == ()


def test_two_taggers_keep_their_own_tags():
    active1 = _node_links.ActiveLinks()
    active2 = _node_links.ActiveLinks()
    t1 = _node_links.NodeTagger(active1)
    t2 = _node_links.NodeTagger(active2)
    link = L.Linear(2, 2)
    active1.enter(link, 'one')
    t1.register()
    t2.register()
    try:
        y = link(numpy.ones((1, 2), numpy.float32))
    finally:
        t1.unregister()
        t2.unregister()
    assert t1.links_of(y.creator) == ('one',)
    assert t2.links_of(y.creator) == ()


def test_tags_keep_neither_nodes_nor_links_alive():
    model = MLP()
    tagger, loss = run_tagged(model, numpy.ones((2, 4), numpy.float32))
    node = weakref.ref(loss.creator.inputs[0].creator)
    link = weakref.ref(model)
    assert tagger.links_of(node()) == ('MLP', 'MLP/l2')
    del loss, model
    gc.collect()
    assert node() is None and link() is None


def test_register_is_counted_and_picks_a_free_name():
    hooks = chainer.get_function_hooks()
    tagger = _node_links.NodeTagger(_node_links.ActiveLinks(), name='Tag')
    other = chainer.FunctionHook()
    other.name = 'Tag'
    with other:
        tagger.register()
        tagger.register()
        assert hooks['Tag_1'] is tagger
        tagger.unregister()
        assert hooks['Tag_1'] is tagger
        tagger.unregister()
        assert 'Tag_1' not in hooks
        tagger.unregister()  # one too many: nothing to do
        assert list(hooks) == ['Tag']
    assert list(hooks) == []


@pytest.mark.parametrize('calls', [1, 3])
def test_registered_tagger_sees_backward(calls):
    model = MLP()
    for _ in range(calls):
        tagger, _ = run_tagged(model, numpy.ones((1, 4), numpy.float32))
        assert len(tagger.backward) == 4
    assert list(chainer.get_function_hooks()) == []

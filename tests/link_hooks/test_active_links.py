import chainer.links as L


from chainer_hookext.link_hooks import _active_links
from tests.conftest import MLP


def test_enter_derives_names_from_parents():
    model = MLP()
    active = _active_links.ActiveLinks()
    assert active.enter(model) == 'MLP'
    assert active.enter(model.l1) == 'MLP/l1'
    assert active.names == ('MLP', 'MLP/l1')
    assert active.leave(model.l1) == 'MLP/l1'
    assert active.leave(model) == 'MLP'
    assert active.names == ()
    # A child called on its own is named after itself.
    assert active.enter(model.l2) == 'l2'


def test_enter_keeps_given_name():
    active = _active_links.ActiveLinks()
    link = L.Linear(2, 2)
    assert active.enter(link, 'main/predictor/l1') == 'main/predictor/l1'
    assert active.names == ('main/predictor/l1',)


def test_leave_a_link_not_entered():
    active = _active_links.ActiveLinks()
    outer, other = L.Linear(2, 2), L.Linear(2, 2)
    active.enter(outer, 'outer')
    assert active.leave(other) is None
    assert active.names == ('outer',)


def test_leave_drops_entries_left_by_a_raising_forward():
    active = _active_links.ActiveLinks()
    a, b, c = L.Linear(2, 2), L.Linear(2, 2), L.Linear(2, 2)
    active.enter(a, 'a')
    active.enter(b, 'b')  # b's forward raised: never left
    active.enter(c, 'c')
    assert active.leave(a) == 'a'
    assert active.names == ()
    active.enter(a, 'a')
    active.reset()
    assert active.names == () and active.leave(a) is None

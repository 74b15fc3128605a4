import re

import chainer
import chainer.link_hooks
import chainer.links as L
import numpy
import pytest

import chainer_hookext
from chainer_hookext import ScopedLinkHook
from chainer_hookext import _observer
from tests.conftest import MLP


class ModeProbe(ScopedLinkHook):
    """Records ``(link, chainer.config.train)`` of the calls in scope."""

    name = 'ModeProbe'

    def __init__(self, **modes):
        super().__init__(**modes)
        self.calls = []

    def forward_preprocess(self, args):
        if self.in_scope(args.link):
            self.calls.append((args.link, chainer.config.train))


def call_in_both_modes(hook, link):
    x = numpy.zeros((1, 4), numpy.float32)
    with hook:
        for train in (True, False):
            with chainer.using_config('train', train):
                link(x)


@pytest.mark.parametrize('own,scope,mode', [
    ((True, True), (True, True), None),
    ((True, True), (True, False), True),
    ((True, True), (False, True), False),
    ((True, False), (True, True), True),
    ((True, False), (True, False), True),
    ((False, True), (True, True), False),
    ((False, True), (False, True), False),
])
def test_acts_in_the_modes_both_allow(own, scope, mode):
    hook = ModeProbe(train=own[0], eval=own[1])
    hook.set_scope(None, train=scope[0], eval=scope[1])
    assert hook.config_train is mode
    link = L.Linear(4, 2)
    call_in_both_modes(hook, link)
    fired = [train for _, train in hook.calls]
    assert fired == [train for train in (True, False)
                     if mode is None or mode == train]


def test_own_modes_outlive_set_scope():
    hook = ModeProbe(eval=False)
    hook.set_scope(None, train=True, eval=False)
    hook.set_scope(None)
    assert hook.config_train is True
    assert hook.own_modes == (True, False)
    assert hook.scope_modes == (True, True)


def test_no_mode_in_common_is_refused_and_changes_nothing():
    model = MLP()
    hook = ModeProbe(train=False)
    hook.set_scope({id(model.l1): 'l1'})
    with pytest.raises(ValueError, match=re.escape(
            '`ModeProbe.set_scope(train=True, eval=False)` leaves no mode '
            'to act in: the hook itself acts only with train=False, '
            'eval=True')):
        hook.set_scope(None, train=True, eval=False)
    assert hook.link_names == {id(model.l1): 'l1'}
    assert hook.config_train is False


@pytest.mark.parametrize('call', [
    lambda: ModeProbe(train=False, eval=False),
    lambda: ModeProbe().set_scope(None, train=False, eval=False),
])
def test_never_fires(call):
    with pytest.raises(ValueError, match='would never fire'):
        call()


def test_links_in_scope_only():
    model = MLP()
    hook = ModeProbe()
    hook.set_scope({id(model.l2): 'main/l2'})
    call_in_both_modes(hook, model)
    assert hook.calls == [(model.l2, True), (model.l2, False)]
    hook.set_scope(None)
    hook.calls = []
    call_in_both_modes(hook, model.l1)
    assert hook.calls == [(model.l1, True), (model.l1, False)]


@pytest.mark.parametrize('name', [
    'ActivationStatisticsHook', 'CallbackHook', 'CaptureOutputsHook',
    'NonFiniteHook', 'TimerHook'])
def test_every_hook_of_the_package_filters_by_itself(name):
    assert issubclass(getattr(chainer_hookext, name), ScopedLinkHook)


class NaNInEval(chainer.Link):
    def forward(self, x):
        return x if chainer.config.train else x * numpy.float32('nan')


def captured(hook):
    return sorted(v.shape[0] for v in hook.outputs.values())


def statistics(hook):
    return hook.statistics()


def findings(hook):
    return [e.link for e in hook.findings]


# Each debugging hook made for training mode only, and what it saw of one
# training call (batch 1) and one evaluation call (batch 2, NaN).
@pytest.mark.parametrize('make,seen,expected', [
    (lambda: chainer_hookext.CaptureOutputsHook(), captured, [1]),
    (lambda: chainer_hookext.ActivationStatisticsHook(
        statistics=('max',)), statistics, {'NaNInEval/out/max': 1.0}),
    (lambda: chainer_hookext.NonFiniteHook(
        eval=False, action='report', backward=False), findings, []),
])
def test_output_hooks_keep_their_own_modes(make, seen, expected):
    link = NaNInEval()
    hook = make()
    hook.set_scope(None, train=True, eval=True)
    with hook:
        link(numpy.ones((1, 2), numpy.float32))
        with chainer.using_config('train', False):
            link(numpy.ones((2, 2), numpy.float32))
    assert seen(hook) == expected


def test_with_hook_is_a_listener_of_the_packages_one_entry():
    ours = chainer_hookext.TimerHook()
    link = L.Linear(2, 2)
    with ours:
        assert chainer._get_link_hooks() == {_observer.KEY: ours}
        # The plain name stays free for Chainer's TimerHook.
        with chainer.link_hooks.TimerHook() as theirs:
            link(numpy.ones((1, 2), numpy.float32))
        with pytest.raises(RuntimeError, match='entered again'):
            ours.__enter__()
    assert chainer._get_link_hooks() == {}
    assert ours.total_calls() == 1 and len(theirs.call_history) == 1

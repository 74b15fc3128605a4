import gc
import weakref

import chainer
import chainer.functions as F
import numpy
import pytest

from chainer_hookext import _registry
from chainer_hookext import _tagging
from tests.conftest import hook_keys


class Recorder(_tagging.NodeTagger):
    """Tags each node with ``value``; records the tags seen in backward."""

    def __init__(self, value, name='Recorder'):
        super().__init__(name)
        self.value = value
        self.seen = []

    def forward_preprocess(self, function, in_data):
        function._chainer_hookext_tag = self.value

    def backward_preprocess(self, function, in_data, out_grad):
        self.seen.append(self.tag_of(function))


def x():
    return chainer.Variable(numpy.ones((2, 3), numpy.float32))


def test_tags_are_read_back_in_backward():
    tagger = _tagging.new_tagger(Recorder, 'one')
    try:
        y = F.sum(F.relu(x()))
    finally:
        tagger.unregister()
    assert tagger.tag_of(y.creator) == 'one'
    assert tagger.tag_of(F.identity(x()).creator) is None  # not tagged


def test_taggers_registered_at_once_keep_their_own_tags():
    first = _tagging.new_tagger(Recorder, 'one')
    second = _tagging.new_tagger(Recorder, 'two', name='Other')
    try:
        assert (first.slot, second.slot) == (0, 1)
        y = F.sum(x())
        y.backward()
    finally:
        second.unregister()
        first.unregister()
    assert first.seen == ['one'] and second.seen == ['two']
    assert vars(y.creator)[_tagging.TAG] == 'one'
    assert vars(y.creator)[second.extra_name] == {1: 'two'}
    # Slots are free again: the next tagger takes slot 0.
    third = _tagging.new_tagger(Recorder, 'three')
    assert third.slot == 0
    third.unregister()
    assert third.slot is None


def test_tags_keep_no_node_alive():
    tagger = _tagging.new_tagger(Recorder, 'one')
    try:
        node = weakref.ref(F.sum(x()).creator)
    finally:
        tagger.unregister()
    gc.collect()
    assert node() is None


def test_register_is_counted_and_picks_a_free_name():
    hooks = chainer.get_function_hooks()
    other = chainer.FunctionHook()
    other.name = 'chainer_hookext.Tag'
    with other:
        tagger = _tagging.new_tagger(Recorder, None, name='Tag')
        try:
            tagger.register()
            assert _registry.registered(hooks)[
                'chainer_hookext.Tag_1'] is tagger
            tagger.unregister()
            assert _registry.registered(hooks)[
                'chainer_hookext.Tag_1'] is tagger
        finally:
            tagger.unregister()
        assert hook_keys(hooks) == ['chainer_hookext.Tag']
        assert not tagger.registered
        with pytest.raises(RuntimeError, match='new_tagger'):
            tagger.register()
    assert list(hooks) == []


class Overriding(Recorder):
    """Overrides a tagging method with one that does not touch the tag."""

    def forward_preprocess(self, function, in_data):
        pass  # tags nothing


def test_an_override_wins_in_every_slot():
    first = _tagging.new_tagger(Recorder, 'one')
    second = _tagging.new_tagger(Overriding, 'two', name='Other')
    try:
        assert second.slot == 1
        y = F.sum(x())
    finally:
        second.unregister()
        first.unregister()
    assert second.tag_of(y.creator) is None
    assert first.tag_of(y.creator) == 'one'


def test_a_timer_beside_the_links_tagger_runs_its_class_as_written():
    # TimedLinks' backward timer beside a hook reading the links that made
    # each node (the thread's links tagger): each keeps its own attribute,
    # so neither runs a copy of its class.
    from chainer_hookext import NonFiniteHook
    from chainer_hookext import TimerHook
    from chainer_hookext.timing import backward
    from tests.conftest import MLP
    model = MLP()
    timer = TimerHook(backward=True)
    guard = NonFiniteHook(action='report')
    with guard, timer:
        assert type(timer._backward_timer) is backward.BackwardTimer
        y = model(numpy.ones((2, 4), numpy.float32))
        F.sum(y).backward()
    tags = {name for name in vars(y.creator) if name.startswith(_tagging.TAG)}
    assert tags == {_tagging.TAG}
    assert timer.summary(by='path')['/l2']['backward_time'] >= 0


def test_timers_at_once_run_their_classes_as_written():
    # Four timers in one thread (a TimerHook inside three more, as copies
    # of a hooked link make them): none runs a copy of its class, and each
    # charges the backward steps of its own links.
    from chainer_hookext import TimerHook
    from chainer_hookext.costs import counter
    from chainer_hookext.timing import backward
    from tests.conftest import MLP
    model = MLP()
    timers = [TimerHook(backward=True), TimerHook(backward=True, flops=True),
              TimerHook(backward=True, functions=True),
              TimerHook(backward=True, flops=True, functions=True)]
    classes = [backward.BackwardTimer, counter.FlopCounter,
               backward.FunctionTimer, counter.FunctionFlopCounter]
    with timers[0], timers[1], timers[2], timers[3]:
        assert [type(timer._backward_timer) for timer in timers] == classes
        assert [timer._backward_timer.slot for timer in timers] == [
            0, 1, 2, 3]
        y = model(numpy.ones((2, 4), numpy.float32))
        F.sum(y).backward()
    for timer in timers:
        summary = timer.summary(by='path')
        assert summary['/l2']['backward_time'] >= 0
        assert summary['/l1']['backward_time'] >= 0
    for timer in timers[1::2]:
        assert timer.summary(by='path')['/l2']['flops'] > 0

"""One entry of the package per registry and thread, calling every hook."""

import threading

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from chainer_hookext import Timeline
from chainer_hookext import _observer
from chainer_hookext import _registry
from tests.conftest import Boom
from tests.conftest import attributes_in_a_dict
from tests.conftest import hook_keys
from tests.conftest import make_trainer


class Calls(chainer.LinkHook):
    """Records its calls in a shared list."""

    def __init__(self, name, calls):
        self.name = name
        self.calls = calls

    def forward_preprocess(self, args):
        self.calls.append((self.name, 'pre'))

    def forward_postprocess(self, args):
        self.calls.append((self.name, 'post'))


class PreOnly(Calls):
    forward_postprocess = chainer.LinkHook.forward_postprocess


class Steps(chainer.FunctionHook):

    def __init__(self, name, calls):
        self.name = name
        self.calls = calls

    def backward_preprocess(self, function, in_data, out_grad):
        self.calls.append((self.name, type(function).__name__))


def call(link):
    link(numpy.ones((1, 2), numpy.float32))


def test_one_entry_whatever_the_number_of_hooks():
    registry = chainer._get_link_hooks()
    calls = []
    a, b = Calls('a', calls), Calls('b', calls)
    link = L.Linear(2, 2)
    first = _registry.add(registry, a)
    assert registry == {_observer.KEY: a}  # alone: itself, at no cost
    second = _registry.add(registry, b)
    try:
        assert list(registry) == [_observer.KEY]
        assert registry[_observer.KEY] is not a
        assert hook_keys(registry) == ['chainer_hookext.a',
                                       'chainer_hookext.b']
        call(link)
        assert calls == [('a', 'pre'), ('b', 'pre'), ('a', 'post'),
                         ('b', 'post')]
    finally:
        _registry.remove(first, a)
    assert registry == {_observer.KEY: b}
    _registry.remove(second, b)
    assert registry == {}
    assert _observer._observers == {}


def test_first_is_called_first_and_no_op_methods_are_not_called():
    registry = chainer._get_link_hooks()
    calls = []
    a, b = Calls('a', calls), PreOnly('b', calls)
    handles = [_registry.add(registry, a), _registry.add(registry, b,
                                                         first=True)]
    try:
        call(L.Linear(2, 2))
    finally:
        _registry.remove(handles[0], a)
        _registry.remove(handles[1], b)
    assert calls == [('b', 'pre'), ('a', 'pre'), ('a', 'post')]


def test_function_hooks_and_swapped_methods():
    registry = chainer.get_function_hooks()
    calls = []
    a, b = Steps('a', calls), Steps('b', calls)
    handles = [_registry.add(registry, a), _registry.add(registry, b)]
    try:
        F.sum(F.relu(chainer.Variable(numpy.ones(2, numpy.float32)))
              ).backward()
        assert calls == [('a', 'Sum'), ('b', 'Sum'), ('a', 'ReLU'),
                         ('b', 'ReLU')]
        del calls[:]

        def quiet(function, in_data, out_grad):
            calls.append(('b', 'swapped'))
        b.backward_preprocess = quiet
        _observer.changed(b)
        F.sum(chainer.Variable(numpy.ones(2, numpy.float32))).backward()
        assert calls == [('a', 'Sum'), ('b', 'swapped')]
    finally:
        for handle, hook in zip(handles, (a, b)):
            _registry.remove(handle, hook)
    assert registry == {}


def test_a_hook_whose_added_raises_is_taken_out():
    class Failing(Calls):
        def added(self, link):
            raise Boom
    registry = chainer._get_link_hooks()
    calls = []
    a = Calls('a', calls)
    handle = _registry.add(registry, a)
    try:
        with pytest.raises(Boom):
            _registry.add(registry, Failing('f', calls))
        assert registry == {_observer.KEY: a}
    finally:
        _registry.remove(handle, a)
    assert registry == {}


def test_each_thread_has_its_own_and_leaving_from_another_works():
    calls = []
    a = Calls('a', calls)
    handle = _registry.add(chainer._get_link_hooks(), a)
    seen = []

    def elsewhere():
        seen.append(dict(chainer._get_link_hooks()))
        _registry.remove(handle, a)  # the hook leaves its thread's registry
    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [{}]
    assert chainer._get_link_hooks() == {}


def test_a_training_with_every_timer_has_one_entry_per_registry(tmp_path):
    trainer = make_trainer(tmp_path, stop=(4, 'iteration'))
    trainer.extend(TimedLinks(flops=True), trigger=(2, 'iteration'))
    trainer.extend(TimedLoop(), trigger=(2, 'iteration'))
    trainer.extend(Timeline(iterations=2), trigger=(2, 'iteration'))
    seen = []

    @chainer.training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        seen.append((list(chainer._get_link_hooks()),
                     list(chainer.get_function_hooks())))
    trainer.extend(look)
    trainer.run()
    assert seen == [([_observer.KEY], [_observer.KEY])] * 4
    assert chainer._get_link_hooks() == {}
    assert chainer.get_function_hooks() == {}


def test_swapping_and_composing_keep_a_hooks_attributes_in_place():
    # vars(hook) would move them into a dict: each read in its hot path
    # slower for the rest of the run (a new class: its own key layout).
    class Timer(Calls):
        def swapped(self, args):
            self.calls.append((self.name, 'swapped'))
    calls = []
    a, b = Timer('a', calls), Calls('b', calls)
    registry = chainer._get_link_hooks()
    handles = [_registry.add(registry, a), _registry.add(registry, b)]
    try:
        assert not attributes_in_a_dict(a)
        _observer.use_method(a, 'forward_postprocess', a.swapped)
        call(L.Linear(2, 2))
        _observer.use_method(a, 'forward_postprocess')
        _observer.use_method(a, 'forward_postprocess')  # none to take back
        call(L.Linear(2, 2))
        assert not attributes_in_a_dict(a)
        assert calls == [('a', 'pre'), ('b', 'pre'), ('a', 'swapped'),
                         ('b', 'post'), ('a', 'pre'), ('b', 'pre'),
                         ('a', 'post'), ('b', 'post')]
    finally:
        for handle, hook in zip(handles, (a, b)):
            _registry.remove(handle, hook)

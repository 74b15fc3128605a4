"""A copy of a link holding the package's hooks (``link.add_hook``): its
hooks run as on the original, and are deleted as the original's are."""

import copy
import pickle

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training

from chainer_hookext import ActivationStatistics
from chainer_hookext import ActivationStatisticsHook
from chainer_hookext import CallbackHook
from chainer_hookext import CaptureOutputs
from chainer_hookext import CaptureOutputsHook
from chainer_hookext import GradientStatistics
from chainer_hookext import GradientStatisticsHook
from chainer_hookext import NonFiniteError
from chainer_hookext import NonFiniteGuard
from chainer_hookext import NonFiniteHook
from chainer_hookext import ScopedLinkHook
from chainer_hookext import TimedLinks
from chainer_hookext import TimerHook
from chainer_hookext import _registry
from chainer_hookext import _running_links
from chainer_hookext.link_hooks import _output_grads
from chainer_hookext.timing import pauses
from tests.conftest import MLP
from tests.conftest import hook_keys
from tests.conftest import make_trainer


class Recorder:
    """CallbackHook's callables, picklable: what each call saw."""

    def __init__(self):
        self.seen = []

    def prehook(self, link, args, kwargs):
        self.seen.append(('pre', link.name, args[0].shape))

    def posthook(self, link, args, kwargs, out):
        self.seen.append(('post', link.name, out.array.tolist()))

    def backward(self, link, grad_outputs):
        self.seen.append(('backward', link.name, grad_outputs[0].tolist()))


def callback_hook():
    recorder = Recorder()
    return CallbackHook(recorder.prehook, recorder.posthook,
                        backward=recorder.backward)


def _statistics(hook):
    return hook.statistics()


def _outputs(hook):
    return {name: out.tolist() for name, out in hook.outputs.items()}


def _findings(hook):
    return [str(e) for e in hook.findings], hook.counts


def _seen(hook):
    return hook.backward.__self__.seen


def _times(hook):
    # A timer's backward is timed by a function hook of the thread: the
    # steps of every model's nodes, those of no link of its own as
    # (outside), the copy's for the original's and the other way round.
    summary = hook.summary(by='path')
    summary.pop('(outside)', None)
    return summary


#: (the hook, what it reports), for every public hook class.
HOOKS = {
    'NonFiniteHook': (NonFiniteHook, _findings),
    'NonFiniteHook(backward=False)': (
        lambda: NonFiniteHook(backward=False), _findings),
    'ActivationStatisticsHook': (ActivationStatisticsHook, _statistics),
    'GradientStatisticsHook': (GradientStatisticsHook, _statistics),
    'CaptureOutputsHook': (CaptureOutputsHook, _outputs),
    'CallbackHook': (callback_hook, _seen),
    'ScopedLinkHook': (ScopedLinkHook, lambda hook: None),
    'TimerHook': (TimerHook, _times),
    'TimerHook(backward=True)': (lambda: TimerHook(backward=True), _times),
    'TimerHook(backward=True, flops=True, functions=True)': (
        lambda: TimerHook(backward=True, flops=True, functions=True),
        _times),
}

COPIES = {
    'deepcopy': copy.deepcopy,
    'pickle': lambda link: pickle.loads(pickle.dumps(link)),
    "copy(mode='copy')": lambda link: link.copy(mode='copy'),
}


def run(model, x=None):
    """Forward and backward on ``model``; returns the output's array."""
    if x is None:
        x = numpy.arange(8, dtype=numpy.float32).reshape(2, 4) - 3
    y = model(x)
    F.sum(y * y).backward()
    return y.array


def thread_state():
    """What the thread holds of the package's: the running links'
    listeners, the node tagger's, the registries' entries, the pauses'."""
    stack = getattr(_running_links._local, 'stack', None)
    tagger = getattr(_output_grads._local, 'tagger', None)
    return {
        'running links': None if stack is None else dict(stack.listeners),
        'tagger': None if tagger is None else dict(tagger._counts),
        'link hooks': hook_keys(chainer._get_link_hooks()),
        'function hooks': hook_keys(chainer.get_function_hooks()),
        'ours': list(_registry.registered(chainer.get_function_hooks())),
        'pauses': list(pauses._listeners()),
    }


#: Which links of an MLP hold the hook.
HOLDERS = {'model': ('/',), 'l1': ('/l1',), 'model and l1': ('/', '/l1')}


def holders(model, where):
    links = dict(model.namedlinks())
    return [links[path] for path in HOLDERS[where]]


@pytest.fixture
def hooked(clock):
    """``hooked(name, where)``: an MLP whose links ``where`` hold one
    hook (``add_hook``); ``hooked.copy(how, model)`` a copy.  At the end
    every hook is deleted from them, and the thread holds nothing of the
    package's."""
    made = []

    def make(name, where='model and l1'):
        factory, report = HOOKS[name]
        model = MLP()
        hook = factory()
        for link in holders(model, where):
            link.add_hook(hook)
        made.append(model)
        return model, hook, report

    def copy_of(how, model):
        made.append(COPIES[how](model))
        return made[-1]
    make.copy = copy_of

    empty = thread_state()
    yield make
    for model in made:
        for link in model.links():
            for name in list(link.local_link_hooks):
                link.delete_hook(name)
    assert thread_state() == empty


@pytest.mark.parametrize('where', list(HOLDERS))
@pytest.mark.parametrize('ran', [False, True], ids=['fresh', 'ran'])
@pytest.mark.parametrize('how', list(COPIES))
@pytest.mark.parametrize('name', list(HOOKS))
def test_copy_runs_as_the_original(hooked, name, how, ran, where):
    model, hook, report = hooked(name, where)
    if ran:
        run(model)
    before = report(hook)
    state = thread_state()
    clone = hooked.copy(how, model)
    copies = [link.local_link_hooks[hook.name]
              for link in holders(clone, where)]
    assert not any(new is hook for new in copies)
    # Chain.copy(mode='copy') copies each child again, its hooks too
    split = how == "copy(mode='copy')" and where == 'model and l1'
    assert (copies[0] is not copies[-1]) == split

    out = run(clone)
    assert report(hook) == before  # the original's hook saw nothing
    numpy.testing.assert_array_equal(out, run(model))
    if not split:  # the same history, the same calls
        assert report(copies[0]) == report(hook)

    for link in holders(clone, where):
        link.delete_hook(hook.name)
    assert thread_state() == state
    numpy.testing.assert_array_equal(run(clone), run(model))


@pytest.mark.parametrize('how', list(COPIES))
@pytest.mark.parametrize('name', list(HOOKS))
def test_copy_computes_with_its_own_weights(hooked, name, how):
    model, hook, _ = hooked(name)
    expected = run(model)
    clone = hooked.copy(how, model)
    clone.l1.W.array[...] += 1
    assert not numpy.array_equal(run(clone), expected)
    numpy.testing.assert_array_equal(run(model), expected)


@pytest.mark.parametrize('ran', [False, True], ids=['fresh', 'ran'])
@pytest.mark.parametrize('how', list(COPIES))
def test_non_finite_hook_of_a_copy_raises_in_the_copy(hooked, how, ran):
    model, hook, _ = hooked('NonFiniteHook')
    if ran:
        run(model)
    clone = hooked.copy(how, model)
    clone.l1.W.array[0, 0] = numpy.nan
    with pytest.raises(NonFiniteError, match='MLP/l1') as found:
        run(clone)
    assert found.value.phase == 'forward'
    assert hook.findings == []
    run(model)  # the original's weights are finite


@pytest.mark.parametrize('how', list(COPIES))
def test_non_finite_hook_of_a_copy_checks_its_backward(hooked, how):
    model, hook, _ = hooked('NonFiniteHook')
    clone = hooked.copy(how, model)
    x = numpy.ones((2, 4), numpy.float32)
    y = clone(x)
    with pytest.raises(NonFiniteError) as found:
        F.sum(y * numpy.float32(numpy.nan)).backward()
    assert found.value.phase == 'backward'
    assert found.value.link == 'MLP'


@pytest.mark.parametrize('how', list(COPIES))
@pytest.mark.parametrize('name', list(HOOKS))
def test_copy_of_a_deleted_hook_is_registered_nowhere(hooked, name, how):
    model, hook, _ = hooked(name)
    run(model)
    for link in holders(model, 'model and l1'):
        link.delete_hook(hook.name)
    empty = thread_state()
    clone = hooked.copy(how, model)
    run(clone)
    assert thread_state() == empty
    new = pickle.loads(pickle.dumps(hook))
    clone.add_hook(new)  # added by Chainer: as a hook
    run(clone)
    assert thread_state() != empty or name == 'ScopedLinkHook'
    clone.delete_hook(new.name)
    assert thread_state() == empty


@pytest.mark.parametrize('name', list(HOOKS))
def test_copy_of_a_hook_alone_is_registered_nowhere(hooked, name):
    model, hook, report = hooked(name, 'l1')
    state = thread_state()
    copies = [copy.deepcopy(hook), pickle.loads(pickle.dumps(hook))]
    run(model)
    assert thread_state() == state
    clone = hooked.copy('deepcopy', model)
    clone.l1.add_hook(copies[0], 'again')  # added by Chainer: as a hook
    run(clone)
    clone.l1.delete_hook(hook.name)
    clone.l1.delete_hook('again')
    assert thread_state() == state


@pytest.mark.parametrize('how', list(COPIES))
@pytest.mark.parametrize('name', list(HOOKS))
def test_copy_of_a_copy(hooked, name, how):
    model, hook, report = hooked(name)
    state = thread_state()
    clone = hooked.copy('deepcopy', model)
    run(clone.l1)  # called by one link of two: still waits for the other
    again = hooked.copy(how, clone)
    before = report(clone.local_link_hooks[hook.name])
    numpy.testing.assert_array_equal(run(again), run(model))
    assert report(clone.local_link_hooks[hook.name]) == before
    for link in holders(clone, 'model and l1'):
        link.delete_hook(hook.name)
    numpy.testing.assert_array_equal(run(again), run(model))
    for link in holders(again, 'model and l1'):
        link.delete_hook(hook.name)
    assert thread_state() == state


def test_copy_of_a_hook_registered_in_the_thread_is_not(clock):
    empty = thread_state()
    hook = GradientStatisticsHook()
    with hook:
        run(MLP())
        new = copy.deepcopy(hook)
        again = pickle.loads(pickle.dumps(hook))
    assert thread_state() == empty
    with new, again:
        run(MLP())
    assert thread_state() == empty
    assert new.statistics().keys() == hook.statistics().keys()


class CopyAndRun(training.Extension):
    """At iteration 2, deep-copies the model and runs the copy."""

    trigger = 2, 'iteration'

    def __init__(self, model, x, t):
        self.model = model
        self.x = x
        self.t = t
        self.results = []

    def __call__(self, trainer):
        if trainer.updater.iteration != 2:
            return
        clone = copy.deepcopy(self.model)
        clone.cleargrads()
        loss = F.softmax_cross_entropy(clone.predictor(self.x), self.t)
        loss.backward()
        self.results.append(
            (loss.array, [p.grad.copy() for _, p in
                          sorted(clone.namedparams())]))


def _train_and_copy(tmp_path, extensions):
    numpy.random.seed(0)
    model = L.Classifier(MLP())
    trainer = make_trainer(tmp_path, stop=(3, 'iteration'), model=model)
    for extension in extensions:
        trainer.extend(extension)
    x = numpy.linspace(-1, 1, 8, dtype=numpy.float32).reshape(2, 4)
    copying = CopyAndRun(model, x, numpy.array([0, 1], numpy.int32))
    trainer.extend(copying)
    trainer.run()
    return copying.results


def test_model_copied_during_training(tmp_path, clock):
    plain = _train_and_copy(tmp_path / 'plain', [])
    ours = _train_and_copy(tmp_path / 'ours', [
        NonFiniteGuard(), ActivationStatistics(), GradientStatistics(),
        CaptureOutputs(), TimedLinks()])
    assert len(plain) == len(ours) == 1
    (plain_loss, plain_grads), = plain
    (our_loss, our_grads), = ours
    assert our_loss == plain_loss
    for ours_grad, plain_grad in zip(our_grads, plain_grads):
        numpy.testing.assert_array_equal(ours_grad, plain_grad)

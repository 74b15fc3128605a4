"""The thread's one stack of running links and its one node tagger, as the
hooks that share them show it."""

import chainer
import chainer.functions as F
import numpy
import pytest
from chainer import training

from chainer_hookext import ActivationStatistics
from chainer_hookext import CaptureOutputsHook
from chainer_hookext import GradientStatistics
from chainer_hookext import LinkMemory
from chainer_hookext import NonFiniteGuard
from chainer_hookext import NonFiniteHook
from chainer_hookext import TimedLinks
from tests.conftest import Boom
from tests.conftest import MLP
from tests.conftest import hook_keys
from tests.conftest import observe


def nan_in_l1_backward():
    """MLP whose l2 weight is NaN only in backward: l1's output gets a NaN
    gradient, every forward output is finite."""
    model = MLP()
    model.l2.W.array[...] = 0
    x = numpy.ones((2, 4), numpy.float32)
    return model, x


def backward_through_sqrt_at_zero(y):
    # d sqrt(u) / du at u = 0 is inf: the gradient w.r.t. y is not finite.
    with numpy.errstate(divide='ignore', invalid='ignore'):
        F.sum(F.sqrt(y * 0)).backward()


def test_two_listeners_with_different_scopes_name_their_own_links():
    model, x = nan_in_l1_backward()
    inner = NonFiniteHook(action='report')
    inner.set_scope({id(model.l1): 'net/l1'})
    outer = NonFiniteHook(action='report')
    outer.set_scope({id(model): 'net'})
    everything = CaptureOutputsHook()  # no scope: names by the links
    with inner, outer, everything:
        backward_through_sqrt_at_zero(model(x))
    # Each names the innermost running link of its own scope: l1's nodes
    # for ``inner``; every node of the model's forward for ``outer``.
    assert {e.link for e in inner.findings} == {'net/l1'}
    assert {e.link for e in outer.findings} == {'net'}
    assert sorted(everything.outputs) == ['MLP', 'MLP/l1', 'MLP/l2']


def test_a_forward_that_raised_then_more_calls():
    model, x = nan_in_l1_backward()
    forward = model.l2.forward
    model.l2.forward = lambda *args: (_ for _ in ()).throw(Boom('l2'))
    hook = NonFiniteHook(action='report')
    capture = CaptureOutputsHook()
    with hook, capture:
        with pytest.raises(Boom):
            model(x)  # caught: the model's and l2's calls never end
        del model.l2.forward
        assert model.l2.forward == forward
        y = model(x)
        backward_through_sqrt_at_zero(y)
        # Named after the calls that run, not those left open.
        assert sorted(capture.outputs) == ['MLP', 'MLP/l1', 'MLP/l2']
        # The functions made outside every link after the model's call
        # are outside the hooked links, not in the l2 left open.
        outputs = {(e.link, e.output.split(' of ')[-1])
                   for e in hook.findings}
        assert outputs == {('MLP/l2', 'LinearFunction'), ('MLP', 'ReLU'),
                           ('MLP/l1', 'LinearFunction')}
        # More calls, after: as in a fresh run.
        capture.clear()
        model.l1(x)
        assert sorted(capture.outputs) == ['l1']


def test_a_link_whose_forward_raised_is_not_the_parent_of_the_next():
    model, x = nan_in_l1_backward()
    capture = CaptureOutputsHook()
    with capture:
        model.l2.forward = lambda *args: (_ for _ in ()).throw(Boom('l2'))
        with pytest.raises(Boom):
            model(x)
        del model.l2.forward
        model(x)
        assert sorted(capture.outputs) == ['MLP', 'MLP/l1', 'MLP/l2']


def train(trainer_factory, memory, guard, activations, gradients, timed):
    numpy.random.seed(0)  # the same model's initial weights
    trainer = trainer_factory(stop=(2, 'iteration'))
    extensions = {}
    if memory:
        extensions['memory'] = LinkMemory()
        trainer.extend(extensions['memory'], trigger=(1, 'iteration'))
    if guard:
        trainer.extend(NonFiniteGuard())
    if activations:
        trainer.extend(ActivationStatistics(), trigger=(1, 'iteration'))
    if gradients:
        trainer.extend(GradientStatistics(), trigger=(1, 'iteration'))
    if timed:
        trainer.extend(TimedLinks(), trigger=(1, 'iteration'))
    seen = []

    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_WRITER + 1)
    def look(trainer):  # the measured iteration's hooks, at its end
        seen.append(hook_keys(chainer.get_function_hooks()))
    trainer.extend(look)
    reports = observe(trainer, '')
    trainer.run()
    figures = [{k: v for k, v in report.items()
                if k.startswith(('memory/', 'main/predictor/l'))
                and '/time/' not in k} for report in reports]
    return figures, extensions.get('memory'), seen


@pytest.mark.parametrize('alone', ['memory', 'activations', 'gradients'])
def test_every_listener_together_gives_the_figures_of_each_alone(
        trainer_factory, alone):
    flags = dict(memory=False, guard=False, activations=False,
                 gradients=False, timed=False)
    flags[alone] = True
    figures_alone, memory_alone, _ = train(trainer_factory, **flags)
    together, memory, seen = train(
        trainer_factory, memory=True, guard=True, activations=True,
        gradients=True, timed=True)
    assert figures_alone[0]
    for one, every in zip(figures_alone, together):
        assert {k: every[k] for k in one} == one
    if alone == 'memory':  # every figure but the time
        assert [r._replace(forward_time=None) for r in memory.last_] == [
            r._replace(forward_time=None) for r in memory_alone.last_]
    # While LinkMemory listens, the one tagger is first in the function
    # hooks (before the timer's); none of its own.
    assert seen[0][0] == 'chainer_hookext.OutputGrads'
    # The tagger, the timer's, and LinkMemory's memory timeline (the
    # peak, on by default: array sizes, no clock read).
    assert sorted(seen[0][1:]) == ['chainer_hookext.MemoryTimeline',
                                   'chainer_hookext.TimedLinks_backward']

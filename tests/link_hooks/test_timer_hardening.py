"""TimerHook and TimedLinks when a call raises or the model changes.

Exact figures: the ``clock`` fixture ticks once per read, ``still`` moves
only on ``sleep``.
"""

import chainer
import chainer.functions as F
import chainer.links as L
import pytest
from chainer import training

from chainer_hookext import TimedLinks
from chainer_hookext import TimerHook
from tests.conftest import Boom
from tests.conftest import MLP
from tests.conftest import TICK
from tests.conftest import data
from tests.conftest import occurrences


def ticks(summary, field='elapsed_time'):
    return {key: entry[field] / TICK for key, entry in summary.items()}


class Identity(chainer.Link):

    def forward(self, x):
        return x


class Raising(chainer.Chain):
    """Calls its child ``calls`` times, then raises."""

    def __init__(self, calls):
        super().__init__()
        self.calls = calls
        with self.init_scope():
            self.inner = Identity()

    def forward(self, x):
        for _ in range(self.calls):
            self.inner(x)
        raise Boom('after inner')


class FallingBack(chainer.Chain):
    """Catches its child's exception and falls back to the child's child."""

    def __init__(self, calls=1, fallback=True):
        super().__init__()
        self.fallback = fallback
        with self.init_scope():
            self.block = Raising(calls)

    def forward(self, x):
        try:
            return self.block(x)
        except Boom:
            return self.block.inner(x) if self.fallback else x


# -- 1. a forward exception caught by the model ------------------------------

@pytest.mark.parametrize('device', ['cpu', 'fake_cuda'])
@pytest.mark.parametrize('n', [1, 2, 3])  # 2, 3: a loop before the raise
def test_fallback_after_a_caught_exception_is_the_callers(
        request, clock, device, n):
    if device == 'fake_cuda':
        request.getfixturevalue('fake_cuda')
    model, hook = FallingBack(calls=n), TimerHook()
    with hook:
        for _ in range(2):
            model(None)
    summary = hook.summary(by='path')
    # Per call: / 0..2n+4; /block 1..2n+1, up to the raise (its last
    # child's end); /block/inner n calls in /block, then the fallback,
    # 2n+2..2n+3, under /.
    assert occurrences(summary) == {
        '/': 2, '/block': 2, '/block/inner': 2 * (n + 1)}
    assert ticks(summary) == {
        '/': 2 * (2 * n + 4), '/block': 2 * 2 * n, '/block/inner': 2 * (n + 1)}
    assert ticks(summary, 'self_time') == {
        '/': 2 * 3, '/block': 2 * n, '/block/inner': 2 * (n + 1)}


def test_link_left_by_a_caught_exception_ends_with_its_caller(clock):
    model, hook = FallingBack(calls=0, fallback=False), TimerHook()
    with hook:
        for _ in range(2):
            model(None)
        # Per call: / 0..2; /block 1..1, ended at its start (its last
        # event) when / ends.
        assert ticks(hook.summary(by='path')) == {'/': 4, '/block': 0}
        model.block.calls = 1
        model(None)  # /block 1..3: up to its last event, its child's end
    summary = hook.summary(by='path')
    assert occurrences(summary) == {'/': 3, '/block': 3, '/block/inner': 1}
    assert ticks(summary) == {'/': 8, '/block': 2, '/block/inner': 1}


class Looping(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.inner = Identity()

    def forward(self, x):
        return [self.inner(x) for _ in range(3)]


def test_loop_over_a_child_is_timed_as_before(clock):
    model, hook = Looping(), TimerHook()
    with hook:
        model(None)
        model(None)
    summary = hook.summary(by='path')
    assert occurrences(summary) == {'/': 2, '/inner': 6}
    assert ticks(summary) == {'/': 14, '/inner': 6}


# -- 2. a backward step that raises ------------------------------------------

class Fragile(chainer.FunctionNode):
    """Identity whose backward takes a second, then raises if asked."""

    def __init__(self, clock, fail):
        self.clock = clock
        self.fail = fail

    def forward(self, inputs):
        return inputs

    def backward(self, indexes, grad_outputs):
        self.clock.sleep(1.0)
        if self.fail:
            raise Boom('out of memory')
        return grad_outputs


class FragileLink(chainer.Link):

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.fail = False

    def forward(self, x):
        return Fragile(self.clock, self.fail).apply((x,))[0]


class FragileNet(chainer.Chain):

    def __init__(self, clock):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 4)
            self.fragile = FragileLink(clock)

    def forward(self, x):
        return F.sum(self.fragile(self.l1(x)))


def test_backward_step_that_raises_is_dropped(still):
    model, hook = FragileNet(still), TimerHook(backward=True)
    x = data()[0]
    with hook:
        model(x).backward()
        model.fragile.fail = True
        with pytest.raises(Boom):  # caught by the updater: batch skipped
            model(x).backward()
        still.sleep(200.0)  # a pause before the next iteration
        model.fragile.fail = False
        model(x).backward()
    selves = {key: entry['backward_self_time']
              for key, entry in hook.summary(by='path').items()}
    # The step that raised charges nothing, nor does the pause after it.
    assert selves == {'/': 0.0, '/l1': 0.0, '/fragile': 2.0}
    assert hook.total_backward_time() == 2.0


class Forgetting(chainer.Chain):
    """Calls its child through ``F.forget``, after half a second."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        with self.init_scope():
            self.fragile = FragileLink(clock)

    def forward(self, x):
        return F.forget(self.slow, x)

    def slow(self, x):
        self.clock.sleep(0.5)
        return self.fragile(x)


def test_forget_still_charges_its_step(still):
    # F.forget's step runs a backward of its own (not a step left by an
    # exception): its recomputation, 0.5, and its inner step, 1.0.
    model, hook = Forgetting(still), TimerHook(backward=True)
    with hook:
        F.sum(model(chainer.Variable(data()[0]))).backward()
    summary = hook.summary(by='path')
    assert summary['/']['backward_self_time'] == 1.5
    assert hook.total_backward_time() == 1.5


# -- 3. a layer replaced during training --------------------------------------

def test_replaced_link_keeps_its_path(clock):
    model, hook = L.Classifier(MLP()), TimerHook()
    x, t = data()
    with hook:
        model(x, t)
        del model.predictor.l2
        model.predictor.add_link('l2', L.Linear(8, 3))
        model(x, t)
    summary = hook.summary(by='path')
    assert list(summary) == [
        '/', '/predictor', '/predictor/l1', '/predictor/l2']
    assert ticks(summary) == {
        '/': 14, '/predictor': 10, '/predictor/l1': 2, '/predictor/l2': 2}


def test_replaced_link_reported_by_timed_links(trainer_factory, clock):
    trainer = trainer_factory(stop=(4, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(TimedLinks(), trigger=(1, 'iteration'))
    reported = {}

    @training.make_extension(priority=training.PRIORITY_READER)
    def replace(trainer):
        # After TimedLinks (PRIORITY_WRITER) reported the iteration.
        reported[trainer.updater.iteration] = {
            key: value / TICK for key, value in trainer.observation.items()
            if key.startswith('time/main/predictor/l2')}
        if trainer.updater.iteration == 2:
            del model.predictor.l2
            model.predictor.add_link('l2', L.Linear(8, 3))

    trainer.extend(replace)
    trainer.run()
    # One tick forward and one backward step of a tick, every iteration.
    for iteration in (1, 2, 3, 4):
        assert reported[iteration] == {
            'time/main/predictor/l2': 1, 'time/main/predictor/l2/self': 1,
            'time/main/predictor/l2/backward': 1,
            'time/main/predictor/l2/backward/self': 1}, iteration

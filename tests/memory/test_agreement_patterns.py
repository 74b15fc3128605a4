"""LinkMemory against reality in other training patterns: a gradient
penalty computed with ``chainer.grad`` inside the forward, and arrays the
model makes in its forward and gives to a function (a mask, a recurrent
link's zero state).

The method and the window are ``test_agreement.py``'s: NumPy's bytes
allocated from the start of the predictor's forward to the end of the loss
and not freed, against the activations LinkMemory reports.
"""

import chainer
import chainer.functions as F
import chainer.links as L
import pytest

import chainer_hookext
from tests.conftest import MaskedMLP
from tests.memory.test_agreement import run


class Penalized(chainer.Chain):
    """A gradient penalty in the forward: ``chainer.grad`` of the first
    layer's output with respect to the input (with double backprop, so
    that the penalty's gradient reaches ``l1``), then more layers."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(784, 100)
            self.l2 = L.Linear(100, 128)
            self.l3 = L.Linear(128, 10)

    def forward(self, x):
        x = chainer.Variable(x)
        h = F.tanh(self.l1(x))
        gx, = chainer.grad([F.sum(h)], [x], enable_double_backprop=True)
        penalty = F.sum(gx * gx)
        return self.l3(self.l2(h)), penalty


class PenaltyLoss(chainer.Chain):
    """The softmax cross entropy of the predictor's output plus its
    penalty."""

    def __init__(self, predictor):
        super().__init__()
        with self.init_scope():
            self.predictor = predictor

    def forward(self, x, t):
        y, penalty = self.predictor(x)
        return F.softmax_cross_entropy(y, t) + penalty


def test_gradient_penalty_in_the_forward(tmp_path):
    predictor = Penalized()
    memory = chainer_hookext.LinkMemory()
    probe, reported = run(predictor, (784,), 32, tmp_path,
                          model=PenaltyLoss(predictor), memory=memory)
    assert probe.numpy[::3] == reported  # to the byte
    # l2's output (32 x 128 float32), the input l3 retains: made after the
    # penalty's backward, kept for the training's.
    rows = {row.key: row for row in memory.last_}
    assert rows['main/predictor/l3'].activations == 32 * 128 * 4


class Masked(MaskedMLP):
    """784-256-10 with a mask made in the forward."""

    def __init__(self):
        super().__init__(784, 256, 10)


class Recurrent(chainer.Chain):
    """``L.LSTM`` from its zero state (made in its forward), over rows of
    the image as steps."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.lstm = L.LSTM(28, 64)
            self.fc = L.Linear(64, 10)

    def forward(self, x):
        self.lstm.reset_state()
        x = F.reshape(x, (len(x), 28, 28))
        for step in range(4):
            h = self.lstm(x[:, step])
        self.lstm.reset_state()  # the graph alone keeps the state
        return self.fc(h)


class StackedRecurrent(chainer.Chain):
    """``L.NStepLSTM`` with ``hx`` and ``cx`` ``None`` (zeros it makes)."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.rnn = L.NStepLSTM(1, 28, 32, 0.0)
            self.fc = L.Linear(32, 10)

    def forward(self, x):
        xs = F.separate(F.reshape(x, (len(x), 28, 28)))
        hy, cy, ys = self.rnn(None, None, list(xs))
        return self.fc(hy[0])


@pytest.mark.parametrize('predictor', [Masked, Recurrent, StackedRecurrent])
def test_arrays_made_in_the_forward(predictor, tmp_path):
    probe, reported = run(predictor(), (784,), 32, tmp_path)
    assert probe.numpy[::3] == reported  # to the byte


def test_the_mask_is_counted(tmp_path):
    memory = chainer_hookext.LinkMemory()
    run(Masked(), (784,), 32, tmp_path, memory=memory)
    rows = {row.key: row for row in memory.last_}
    # The relu's output and the mask (32 x 256 float32 each), kept by the
    # F.mul node created in the predictor's own forward.
    assert rows['main/predictor'].self_activations == 2 * 32 * 256 * 4

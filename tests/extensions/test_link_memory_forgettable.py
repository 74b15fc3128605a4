"""LinkMemory's ``forgettable``: what wrapping a link in F.forget frees."""

import chainer
import chainer.functions as F
import chainer.links as L
import pytest

import chainer_hookext


class Block(chainer.Chain):
    """Linear, batch normalization, relu, Linear; run through F.forget if
    ``forget``."""

    def __init__(self, forget):
        super().__init__()
        self.forget = forget
        with self.init_scope():
            self.l1 = L.Linear(8, 8)
            self.bn = L.BatchNormalization(8)
            self.l2 = L.Linear(8, 8)

    def body(self, x):
        return self.l2(F.relu(self.bn(self.l1(x))))

    def forward(self, x):
        return F.forget(self.body, x) if self.forget else self.body(x)


class Net(chainer.Chain):

    def __init__(self, forget=False):
        super().__init__()
        with self.init_scope():
            self.l0 = L.Linear(4, 8)
            self.block = Block(forget)
            self.fc = L.Linear(8, 3)

    def forward(self, x):
        return self.fc(F.relu(self.block(F.relu(self.l0(x)))))


def measure(trainer_factory, forget):
    trainer = trainer_factory(
        model=L.Classifier(Net(forget)), stop=(1, 'iteration'))
    memory = chainer_hookext.LinkMemory()
    trainer.extend(memory, trigger=(1, 'iteration'))
    trainer.run()
    return {row.key: row for row in memory.last_}


def test_forgettable_is_what_f_forget_frees(trainer_factory):
    plain = measure(trainer_factory, forget=False)
    forgotten = measure(trainer_factory, forget=True)
    freed = plain['main'].activations - forgotten['main'].activations
    assert freed > 0
    assert plain['main/predictor/block'].forgettable == freed
    # Wrapped, the block keeps nothing: its input is kept by the relu before
    # it, the Forget node's by main/predictor.
    assert forgotten['main/predictor/block'].activations == 0


@pytest.mark.parametrize('name, activations, forgettable', [
    # Fed the relu's output, which the relu keeps: nothing of its own.
    ('block/l1', 0, 0),
    # Its input (8 x 8 float32: the Forget node would keep it instead) and
    # the batch's mean, variance and inverse deviation (3 x 8 float32).
    ('block/bn', 8 * 8 * 4 + 3 * 8 * 4, 3 * 8 * 4),
    # Its output (8 x 3 float32), which the loss outside it keeps too.
    ('fc', 8 * 3 * 4, 0),
])
def test_a_link_keeping_only_its_input_and_output_frees_nothing(
        trainer_factory, name, activations, forgettable):
    row = measure(trainer_factory, forget=False)['main/predictor/' + name]
    assert (row.activations, row.forgettable) == (activations, forgettable)

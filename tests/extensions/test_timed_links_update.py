"""TimedLinks' figures are the update's (issue 32): which calls count.

Calls in the trainer's update are training figures whatever
``chainer.config.train`` says; calls in an ``Evaluator`` are validation
figures; calls anywhere else outside the update (an extension's own model
calls and backward, a nested trainer) are neither.  On the fake clock every
figure is exact: a run with such calls reports what a run without them does.
"""

import chainer
import chainer.functions as F
import chainer.links as L
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLinks
from tests.conftest import MLP
from tests.conftest import data
from tests.conftest import make_dataset
from tests.conftest import occurrences


#: Peaks given: none measured at initialize.
HIGH = dict(peak_flops=1e15, peak_bandwidth=1e15)
ITERATIONS = 4


class FrozenStatisticsUpdater(training.updaters.StandardUpdater):
    """Fine-tuning with frozen BatchNorm statistics: the update's forward
    and backward run with ``chainer.config.train`` off."""

    def update_core(self):
        with chainer.using_config('train', False):
            super().update_core()


def make_trainer(tmp_path, updater=training.updaters.StandardUpdater,
                 evaluator=False):
    model = L.Classifier(MLP())
    optimizer = chainer.optimizers.SGD(lr=0.01)
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(make_dataset(), 8, shuffle=False)
    trainer = training.Trainer(
        updater(it, optimizer), (ITERATIONS, 'iteration'),
        out=str(tmp_path / 'result'))
    if evaluator:
        test_it = chainer.iterators.SerialIterator(
            make_dataset(16, seed=1), 8, repeat=False, shuffle=False)
        trainer.extend(extensions.Evaluator(test_it, model),
                       trigger=(2, 'iteration'))
    return trainer


def model_of(trainer):
    return trainer.updater.get_optimizer('main').target


def run(trainer, **kwargs):
    """Runs ``trainer`` with TimedLinks(flops=True): (extension, log)."""
    ext = TimedLinks(flops=True, **dict(HIGH, **kwargs))
    trainer.extend(ext, trigger=(2, 'iteration'))
    log = extensions.LogReport(trigger=(2, 'iteration'))
    trainer.extend(log)
    trainer.run()
    return ext, [{k: v for k, v in e.items() if k.startswith((
        'time/', 'flops/', 'validation/time/', 'validation/flops/'))}
        for e in log.log]


@pytest.fixture
def baseline(clock, tmp_path):
    """The figures of a plain run, on the fake clock; restarts the clock."""
    clock()
    _, log = run(make_trainer(tmp_path / 'baseline'))
    clock()
    return log


def probe(trainer, train=True):
    """An extension calling the model's predictor and backward, with the
    loss outside the model, each iteration."""
    @training.make_extension(trigger=(1, 'iteration'))
    def probe(trainer):
        x, _ = data()
        with chainer.using_config('train', train):
            F.sum(model_of(trainer).predictor(x)).backward()
    return probe


# -- 1: an extension's backward, a nested trainer -------------------------

def test_probe_extension_backward_is_not_training(
        baseline, tmp_path):
    trainer = make_trainer(tmp_path)
    trainer.extend(probe(trainer), name='probe')
    ext, log = run(trainer)
    assert log == baseline
    assert [e['time/(outside)/backward'] for e in log] == [0, 0]
    assert [e['flops/(outside)/backward'] for e in log] == [0, 0]
    assert occurrences(ext.summary())['/'] == ITERATIONS


def test_backward_in_an_extension_of_update_nodes_is_not_training(
        baseline, tmp_path):
    # The update's loss, kept and backpropagated again by an extension:
    # its nodes were tagged in the update, the steps run outside it.
    class KeepLoss(training.updaters.StandardUpdater):
        def update_core(self):
            batch = self.get_iterator('main').next()
            x, t = chainer.dataset.concat_examples(batch)
            optimizer = self.get_optimizer('main')
            self.loss = optimizer.target(x, t)
            optimizer.target.cleargrads()
            self.loss.backward(retain_grad=True)
            optimizer.update()

    @training.make_extension(trigger=(1, 'iteration'))
    def again(trainer):
        trainer.updater.loss.backward()

    trainer = make_trainer(tmp_path, updater=KeepLoss)
    trainer.extend(again, name='again')
    _, log = run(trainer)
    assert log == baseline


def nested_trainer(model, tmp_path, timed=None):
    optimizer = chainer.optimizers.SGD(lr=0.01)
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(make_dataset(), 8, shuffle=False)
    trainer = training.Trainer(
        training.updaters.StandardUpdater(it, optimizer), (2, 'iteration'),
        out=str(tmp_path))
    if timed is not None:
        trainer.extend(timed, trigger=(2, 'iteration'))
    return trainer


@pytest.mark.parametrize('nested_timed', [False, True])
def test_nested_trainer_is_not_the_outer_training(
        baseline, tmp_path, nested_timed):
    trainer = make_trainer(tmp_path)
    inner = []

    @training.make_extension(trigger=(2, 'iteration'))
    def fine_tune(trainer):
        timed = TimedLinks(**HIGH, flops=True) if nested_timed else None
        nested_trainer(model_of(trainer), tmp_path / 'nested', timed).run()
        inner.append(timed)

    trainer.extend(fine_tune, name='fine_tune')
    ext, log = run(trainer)
    assert occurrences(ext.summary())['/'] == ITERATIONS
    if not nested_timed:
        assert log == baseline
        return
    # Each nested TimedLinks counts its own trainer's two updates only.
    assert [occurrences(t.summary())['/'] for t in inner] == [2, 2]
    assert [e['time/(outside)/backward'] for e in log] == [0, 0]


# -- 2: the update with chainer.config.train off --------------------------

@pytest.mark.parametrize('validation', [False, True])
def test_update_with_train_off_is_training(baseline, tmp_path, validation):
    trainer = make_trainer(tmp_path, updater=FrozenStatisticsUpdater)
    ext, log = run(trainer, validation=validation)
    assert log == baseline
    assert log[0]['time/main'] > 0 and log[0]['flops/main'] > 0
    assert occurrences(ext.summary())['/'] == ITERATIONS
    assert ext.hook.total_calls('eval') == 0


# -- 2, 3: Evaluator is validation; other calls outside are neither -------

@pytest.mark.parametrize('train', [False, True])
def test_extension_calls_outside_the_update_are_neither(
        clock, tmp_path, train):
    clock()
    ext, baseline = run(make_trainer(tmp_path / 'baseline', evaluator=True),
                        validation=True)
    evaluated = ext.hook.total_calls('eval')
    assert evaluated == 4  # two evaluations of two batches
    clock()
    trainer = make_trainer(tmp_path, evaluator=True)
    trainer.extend(probe(trainer, train=train), name='sample')
    ext, log = run(trainer, validation=True)
    assert log == baseline
    assert ext.hook.total_calls('eval') == evaluated
    assert occurrences(ext.summary())['/'] == ITERATIONS


def test_evaluator_with_train_on_is_validation(clock, tmp_path):
    # An Evaluator whose evaluation runs with train on (a subclass's own
    # evaluate): validation figures all the same, never training ones.
    class TrainModeEvaluator(extensions.Evaluator):
        def evaluate(self):
            with chainer.using_config('train', True):
                return super().evaluate()

    trainer = make_trainer(tmp_path)
    test_it = chainer.iterators.SerialIterator(
        make_dataset(16, seed=1), 8, repeat=False, shuffle=False)
    trainer.extend(TrainModeEvaluator(test_it, model_of(trainer)),
                   trigger=(2, 'iteration'))
    ext, log = run(trainer, validation=True)
    assert occurrences(ext.summary())['/'] == ITERATIONS
    assert ext.hook.total_calls('eval') == 4
    assert log[0]['validation/time/main'] > 0


def test_after_training_the_hook_goes_by_config_again(tmp_path):
    trainer = make_trainer(tmp_path)
    ext, _ = run(trainer)
    assert ext.hook.parts is None
    backward = ext.hook.total_backward_time('train')
    with ext.hook:
        model_of(trainer)(*data()).backward()
    assert occurrences(ext.summary())['/'] == ITERATIONS + 1
    assert ext.hook.total_backward_time('train') > backward

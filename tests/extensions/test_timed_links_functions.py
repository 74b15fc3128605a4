"""TimedLinks(functions=True): figures per function type."""

import chainer
import chainer.functions as F
import pytest
from chainer.training import extensions

from chainer_hookext import TimedLinks
from chainer_hookext.report import keys
from chainer_hookext.timing import records
from tests.conftest import BACKWARD
from tests.conftest import FORWARD
from tests.conftest import FakeComm
from tests.conftest import make_slow_trainer
from tests.conftest import observe
from tests.conftest import snapshot_of

SLOW = 'time/function/SlowNode'


def run(trainer, every=2, snapshot=None, **kwargs):
    timed = TimedLinks(functions=True, **kwargs)
    trainer.extend(timed, trigger=(every, 'iteration'))
    reports = observe(trainer, '')
    if snapshot is not None:
        chainer.serializers.NpzDeserializer(snapshot).load(trainer)
    trainer.run()
    return timed, [{k: v for k, v in r.items() if '/function/' in k}
                   for r in reports]


def test_keys_per_iteration(still, tmp_path):
    # SlowModel: one SlowNode takes FORWARD seconds forward, another
    # BACKWARD seconds backward, each iteration; Linear and the loss take
    # no time on the still clock.
    timed, reports = run(make_slow_trainer(still, tmp_path), flops=True)
    report = reports[1]
    assert report[SLOW] == FORWARD
    assert report[SLOW + '/backward'] == BACKWARD
    assert report['time/function/LinearFunction'] == 0.0
    assert report['flops/function/LinearFunction'] > 0
    assert report['flops/function/LinearFunction/backward'] > (
        report['flops/function/LinearFunction'])
    assert 'time/function/SoftmaxCrossEntropy' in report
    assert reports[0] == {}  # reported every 2 iterations
    summary = timed.function_summary()
    assert list(summary)[0] == 'SlowNode'
    assert summary['SlowNode']['time'] == 4 * FORWARD
    assert summary['SlowNode']['occurrence'] == 8
    assert summary['LinearFunction']['flops'] > 0
    by_link = timed.summary(by='name')
    assert by_link['main']['functions']['SlowNode']['time'] == 4 * FORWARD


def test_off_by_default(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path)
    trainer.extend(TimedLinks(), trigger=(2, 'iteration'))
    reports = observe(trainer, '')
    trainer.run()
    assert not any('/function/' in k for r in reports for k in r)
    with pytest.raises(ValueError, match='backward=True'):
        TimedLinks(functions=True, backward=False)
    with pytest.raises(TypeError, match='functions'):
        TimedLinks(functions='yes')


def test_resume_reports_the_same(still, tmp_path):
    _, whole = run(make_slow_trainer(still, tmp_path / 'a', stop=6))
    trainer = make_slow_trainer(still, tmp_path / 'b', stop=3)
    run(trainer)
    snapshot = snapshot_of(trainer)
    _, resumed = run(make_slow_trainer(still, tmp_path / 'c', stop=6),
                     snapshot=snapshot)
    assert resumed[-1] == whole[-1]
    assert resumed[-1][SLOW] == FORWARD


def test_a_type_new_mid_run(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=6)
    model = trainer.updater.get_optimizer('main').target
    forward = model.predictor.forward

    @chainer.training.make_extension(trigger=(2, 'iteration'))
    def add_tanh(trainer):
        model.predictor.forward = lambda x: F.tanh(forward(x))
    trainer.extend(add_tanh)
    _, reports = run(trainer)
    assert 'time/function/Tanh' not in reports[1]
    assert reports[3]['time/function/Tanh/backward'] == 0.0
    assert 'time/function/Tanh' in reports[5]


def test_validation(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path)
    test_it = chainer.iterators.SerialIterator(
        [(x, t) for x, t in trainer.updater.get_iterator('main').dataset][:8],
        4, repeat=False, shuffle=False)
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(extensions.Evaluator(test_it, model),
                   trigger=(2, 'iteration'))
    _, reports = run(trainer, validation=True)
    assert reports[1]['validation/' + SLOW] == FORWARD  # per call
    assert 'validation/' + SLOW + '/backward' not in reports[1]
    assert reports[1][SLOW] == FORWARD


def test_an_optimizer_named_function(trainer_factory):
    trainer = trainer_factory()
    updater = trainer.updater
    optimizer = updater.get_optimizer('main')
    updater._optimizers = {'function': optimizer}
    trainer.extend(TimedLinks(optimizer.target, functions=True))
    with pytest.raises(ValueError, match=r"'function'.*time/function/"):
        trainer.run()


def test_gathered_over_workers(trainer_factory):
    other = [keys.Report('train', 1, [], [records.FunctionEntry(
        'main/predictor/l1', 'LinearFunction', 1.0, 2.0, 1)])]
    comm = FakeComm(0, [other])
    trainer = trainer_factory(stop=(2, 'iteration'))
    trainer.extend(TimedLinks(functions=True, comm=comm),
                   trigger=(1, 'iteration'))
    reports = observe(trainer, '')
    trainer.run()
    report = reports[-1]
    key = 'time/function/LinearFunction'
    assert report[key + '/max'] == 1.0
    assert report[key + '/slowest_rank'] == 1
    assert report[key + '/backward/max'] == 2.0
    assert report[key] == pytest.approx((1.0 + report[key + '/min']) / 2)
    assert 'time/function/ReLU/slowest_rank' in report

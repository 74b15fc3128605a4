import chainer
import numpy
import pytest
from chainer.training import extensions

from chainer_hookext import ActivationStatistics
from chainer_hookext import CallbackHook
from chainer_hookext import LinkHookExtension
from tests.conftest import registered_hooks
from tests.conftest import observe


def collect_l1(trainer, train=True, eval=False):
    """Records copies of l1's outputs through a plain callback hook."""
    model = trainer.updater.get_optimizer('main').target
    seen = []
    hook = CallbackHook(
        posthook=lambda link, a, k, out: seen.append(
            (trainer.updater.iteration,
             chainer.backend.CpuDevice().send(out.array).copy())))
    trainer.extend(LinkHookExtension(
        hook, model.predictor.l1, train=train, eval=eval))
    return seen


def check_reports_at_trigger(trainer):
    seen = collect_l1(trainer)
    trainer.extend(ActivationStatistics(), trigger=(2, 'iteration'))
    reports = observe(trainer, '/out/mean')
    trainer.run()
    assert [sorted(r) for r in reports] == [[], sorted([
        'main/out/mean', 'main/predictor/out/mean',
        'main/predictor/l1/out/mean', 'main/predictor/l2/out/mean'])] * 2
    # The second report covers iterations 3 and 4 only: sums restart.
    # In float64, as the hook sums: a float32 mean near 0 is off by more
    # than 1e-5 of itself.
    x = numpy.concatenate([out for it, out in seen if it >= 2]).ravel()
    assert reports[3]['main/predictor/l1/out/mean'] == pytest.approx(
        x.astype(numpy.float64).mean(), rel=1e-9, abs=1e-12)
    model = trainer.updater.get_optimizer('main').target
    assert registered_hooks(model) == []


def test_reports_at_trigger(trainer_factory):
    check_reports_at_trigger(trainer_factory())


@pytest.mark.gpu
def test_reports_at_trigger_gpu(trainer_factory):
    check_reports_at_trigger(trainer_factory(device='@cupy:0'))


@pytest.mark.parametrize('eval', [False, True])
def test_evaluation_mode(trainer_factory, eval):
    trainer = trainer_factory(evaluator=True)
    seen = collect_l1(trainer, train=True, eval=eval)
    stats = ActivationStatistics(statistics=('max', 'zero_fraction'),
                                 eval=eval)
    trainer.extend(stats)  # each epoch: after Evaluator (both WRITER)
    log = extensions.LogReport()
    trainer.extend(log)
    trainer.run()
    x = numpy.concatenate([out for _, out in seen]).ravel()
    entry = log.log[0]
    assert entry['main/predictor/l1/out/max'] == pytest.approx(x.max())
    assert entry['main/predictor/l1/out/zero_fraction'] == 0.0
    assert 'main/predictor/l1/out/mean' not in entry


def test_links_limit_the_keys(trainer_factory):
    trainer = trainer_factory()
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(ActivationStatistics(model.predictor.l2,
                                        statistics='std'))
    log = extensions.LogReport()
    trainer.extend(log)
    trainer.run()
    assert [k for k in log.log[0] if '/out/' in k] == [
        'main/predictor/l2/out/std']


def test_default_trigger_and_name():
    ext = ActivationStatistics()
    assert ext.trigger == (1, 'epoch')
    assert ext.default_name == 'activation_statistics'
    assert (ext.train, ext.eval) == (True, False)


class MyStatistics(ActivationStatistics):
    pass


@pytest.mark.parametrize('cls', [ActivationStatistics, MyStatistics])
def test_bad_arguments_name_the_class(cls):
    with pytest.raises(ValueError,
                       match=r"`{}\(statistics='avg'\)`".format(cls.__name__)):
        cls(statistics='avg')
    with pytest.raises(TypeError, match=r'`{}\(eval=1\)` is not a flag: '
                                        'use True or False'
                                        .format(cls.__name__)):
        cls(eval=1)


def test_bad_statistics():
    with pytest.raises(ValueError,
                       match=r"`ActivationStatistics\(statistics='avg'\)`"):
        ActivationStatistics(statistics='avg')
    with pytest.raises(ValueError, match=r'`ActivationStatistics\('
                                         r'train=False, eval=False\)`'):
        ActivationStatistics(train=False)

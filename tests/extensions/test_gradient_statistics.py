import chainer
import numpy
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import CallbackHook
from chainer_hookext import GradientStatistics
from chainer_hookext import LinkHookExtension
from chainer_hookext import NonFiniteGuard
from tests.conftest import Boom
from tests.conftest import hook_keys
from tests.conftest import registered_hooks
from tests.conftest import observe


def collect_l1(trainer):
    """Records copies of the gradients w.r.t. l1's outputs, with the
    iteration, through a plain callback hook."""
    model = trainer.updater.get_optimizer('main').target
    seen = []
    hook = CallbackHook(backward=lambda link, grads: seen.append(
        (trainer.updater.iteration,
         chainer.backend.CpuDevice().send(grads[0]).copy())))
    trainer.extend(LinkHookExtension(hook, model.predictor.l1))
    return seen


def check_reports_at_trigger(trainer):
    seen = collect_l1(trainer)
    trainer.extend(GradientStatistics(), trigger=(2, 'iteration'))
    reports = observe(trainer, '/grad/norm')
    trainer.run()
    assert [sorted(r) for r in reports] == [[], sorted([
        'main/grad/norm', 'main/predictor/grad/norm',
        'main/predictor/l1/grad/norm', 'main/predictor/l2/grad/norm'])] * 2
    # The loss's gradient is 1.
    assert reports[1]['main/grad/norm'] == 1.0
    # The second report covers iterations 3 and 4 only: sums restart.
    last = [g for it, g in seen if it >= 2]
    assert len(last) == 2
    assert reports[3]['main/predictor/l1/grad/norm'] == pytest.approx(
        numpy.mean([numpy.linalg.norm(g) for g in last]), rel=1e-5)
    model = trainer.updater.get_optimizer('main').target
    assert registered_hooks(model) == []
    assert hook_keys(chainer.get_function_hooks()) == []


def test_reports_at_trigger(trainer_factory):
    check_reports_at_trigger(trainer_factory())


@pytest.mark.gpu
def test_reports_at_trigger_gpu(trainer_factory):
    check_reports_at_trigger(trainer_factory(device='@cupy:0'))


def test_training_only_and_beside_non_finite_guard(trainer_factory):
    trainer = trainer_factory(evaluator=True)
    trainer.extend(NonFiniteGuard(action='report'))
    trainer.extend(GradientStatistics(statistics=('mean', 'zero_fraction')))
    log = extensions.LogReport()
    trainer.extend(log)
    trainer.run()
    keys = sorted(k for k in log.log[0] if '/grad/' in k)
    assert keys == sorted(
        '{}/grad/{}'.format(link, s)
        for link in ('main', 'main/predictor', 'main/predictor/l1',
                     'main/predictor/l2')
        for s in ('mean', 'zero_fraction'))
    assert not any(k.startswith('validation') and '/grad/' in k
                   for k in log.log[0])


def test_links_limit_the_keys(trainer_factory):
    trainer = trainer_factory()
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(GradientStatistics(model.predictor.l2, statistics='std'))
    log = extensions.LogReport()
    trainer.extend(log)
    trainer.run()
    assert [k for k in log.log[0] if '/grad/' in k] == [
        'main/predictor/l2/grad/std']


@pytest.mark.parametrize('way_out', [None, Boom, KeyboardInterrupt])
def test_nothing_left_on_every_way_out(trainer_factory, way_out):
    trainer = trainer_factory()
    stats = GradientStatistics()
    trainer.extend(stats, trigger=(1, 'iteration'))
    trainer.extend(CallbackHookExtension(), name='cb')
    seen = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        seen.append(hook_keys(chainer.get_function_hooks()))
        if way_out is not None and trainer.updater.iteration == 2:
            raise way_out()
    trainer.extend(look)
    if way_out is None:
        trainer.run()
    else:
        with pytest.raises(way_out):
            trainer.run()
    assert seen[0] == ['chainer_hookext.OutputGrads']
    model = trainer.updater.get_optimizer('main').target
    assert registered_hooks(model) == []
    assert hook_keys(chainer.get_function_hooks()) == []
    assert stats.hook.statistics() == {}


def CallbackHookExtension():
    return LinkHookExtension(CallbackHook(backward=lambda link, g: None))


def test_default_trigger_and_name():
    ext = GradientStatistics()
    assert ext.trigger == (1, 'epoch')
    assert ext.default_name == 'gradient_statistics'
    assert (ext.train, ext.eval) == (True, False)


class MyStatistics(GradientStatistics):
    pass


@pytest.mark.parametrize('cls', [GradientStatistics, MyStatistics])
def test_bad_arguments_name_the_class(cls):
    with pytest.raises(ValueError,
                       match=r"`{}\(statistics='avg'\)`".format(cls.__name__)):
        cls(statistics='avg')
    with pytest.raises(TypeError,
                       match=r'`{}\(statistics=1\)`'.format(cls.__name__)):
        cls(statistics=1)
    with pytest.raises(TypeError, match='links'):
        cls(links='l1')

import numpy
import pytest
from chainer import training

from chainer_hookext import CaptureOutputs
from tests.conftest import MLP
from tests.conftest import registered_hooks


def check_chosen_link(trainer):
    model = trainer.updater.get_optimizer('main').target
    calls = []
    capture = CaptureOutputs(
        model.predictor.l1, keep=True,
        callback=lambda trainer, outputs: calls.append(
            (trainer.updater.iteration, outputs)))
    trainer.extend(capture, trigger=(2, 'iteration'))
    trainer.run()
    assert [it for it, _ in calls] == [2, 4]
    assert [list(out) for _, out in calls] == [['main/predictor/l1']] * 2
    assert calls[0][1] is not capture.outputs  # a copy per call
    assert calls[0][1]['main/predictor/l1'].shape == (8, 8)
    assert list(capture.outputs) == ['main/predictor/l1']
    assert registered_hooks(model) == []


def test_chosen_link_only(trainer_factory):
    check_chosen_link(trainer_factory())


@pytest.mark.gpu
def test_chosen_link_only_gpu(trainer_factory):
    check_chosen_link(trainer_factory(device='@cupy:0'))


def test_default_captures_every_link_then_drops_them(trainer_factory):
    trainer = trainer_factory()
    capture = CaptureOutputs()
    sizes = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        sizes.append(sorted(capture.outputs))
    trainer.extend(capture)
    trainer.extend(look)
    trainer.run()
    assert sizes[-1] == [
        'main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
    assert capture.outputs == {}


def failing_run(trainer, keep):
    model = trainer.updater.get_optimizer('main').target
    capture = CaptureOutputs(model.predictor, keep=keep)

    @training.make_extension(trigger=(1, 'iteration'))
    def fail(trainer):
        if trainer.updater.iteration == 2:
            raise RuntimeError('boom')
    trainer.extend(capture)
    trainer.extend(fail)
    with pytest.raises(RuntimeError, match='boom'):
        trainer.run()
    return capture


@pytest.mark.parametrize('keep,kept', [
    (False, False), (True, True), ('on_error', True)])
def test_keep_after_error(trainer_factory, keep, kept):
    capture = failing_run(trainer_factory(), keep)
    assert bool(capture.outputs) == kept


def test_on_error_keeps_them_on_keyboard_interrupt(trainer_factory):
    # Chainer calls no on_error for KeyboardInterrupt, only finalize.
    trainer = trainer_factory()
    capture = CaptureOutputs(keep='on_error')

    @training.make_extension(trigger=(1, 'iteration'))
    def interrupt(trainer):
        if trainer.updater.iteration == 2:
            raise KeyboardInterrupt
    trainer.extend(capture)
    trainer.extend(interrupt)
    with pytest.raises(KeyboardInterrupt):
        trainer.run()
    assert sorted(capture.outputs) == [
        'main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']


def test_on_error_drops_after_clean_run_inside_except(trainer_factory):
    # An exception the caller is handling is not the run's own.
    capture = CaptureOutputs(keep='on_error')
    trainer = trainer_factory()
    trainer.extend(capture)
    try:
        raise KeyError('handled by the caller')
    except KeyError:
        trainer.run()
    assert capture.outputs == {}


def test_on_error_drops_after_clean_run(trainer_factory):
    capture = CaptureOutputs(keep='on_error')
    trainer = trainer_factory()
    trainer.extend(capture)
    trainer.run()
    assert capture.outputs == {}


def test_link_outside_the_model(trainer_factory):
    trainer = trainer_factory()
    trainer.extend(CaptureOutputs(MLP().l1))
    with pytest.raises(ValueError, match='is not part of the model'):
        trainer.run()


class MyCapture(CaptureOutputs):
    pass


@pytest.mark.parametrize('cls', [CaptureOutputs, MyCapture])
@pytest.mark.parametrize('kwargs,shown', [
    ({'copy': 'no'}, "copy='no'"),
    ({'train': None}, 'train=None'),
    ({'eval': 'yes'}, "eval='yes'"),
])
def test_flags_need_true_or_false(cls, kwargs, shown):
    with pytest.raises(TypeError, match=r'`{}\({}\)` is not a flag: use '
                       'True or False'.format(cls.__name__, shown)):
        cls(**kwargs)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"`MyCapture\(keep='x'\)`"):
        MyCapture(keep='x')
    with pytest.raises(TypeError, match=r"MyCapture\(callback='x'\)"):
        MyCapture(callback='x')
    with pytest.raises(TypeError, match=r"CaptureOutputs\(callback='x'\)"):
        CaptureOutputs(callback='x')
    with pytest.raises(ValueError,
                       match=r"CaptureOutputs\(keep='always'\)"):
        CaptureOutputs(keep='always')
    with pytest.raises(TypeError, match=r"CaptureOutputs\(keep=1\)` is not "
                       r"a bool or str: use one of False, True, 'on_error'"):
        CaptureOutputs(keep=1)
    assert CaptureOutputs(keep=numpy.True_).keep is True
    with pytest.raises(ValueError, match=r'`CaptureOutputs\(train=False, '
                                         r'eval=False\)`'):
        CaptureOutputs(train=False)

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import NonFiniteError
from chainer_hookext import NonFiniteGuard
from tests.conftest import Boom
from tests.conftest import FailingInit
from tests.conftest import registered_hooks


def poison_after(iteration, layer='l2'):
    """Extension writing NaN into a weight after ``iteration`` updates."""

    @training.make_extension(trigger=(1, 'iteration'))
    def poison(trainer):
        if trainer.updater.iteration == iteration:
            model = trainer.updater.get_optimizer('main').target
            W = getattr(model.predictor, layer).W
            W.array[0, 0] = numpy.nan
    return poison


def assert_released(trainer):
    model = trainer.updater.get_optimizer('main').target
    assert registered_hooks(model) == []
    assert chainer.get_function_hooks() == {}


def check_forward_culprit(trainer, finished):
    guard = NonFiniteGuard()
    trainer.extend(guard)
    trainer.extend(poison_after(2))
    with pytest.raises(NonFiniteError) as info:
        trainer.run()
    error = info.value
    assert (error.link, error.iteration, error.phase, error.output) == (
        'main/predictor/l2', 3, 'forward', 'output')
    # Found at once (CPU), the error names the parameter that is NaN.
    hint = ('; its parameter W is non-finite: look at what last wrote it '
            '(an update, a loaded snapshot)')
    assert str(error) == (
        "NaN in the forward of link 'main/predictor/l2' at iteration 3: "
        "output" + (hint if finished == 2 else ''))
    assert error.param == ('main/predictor/l2/W' if finished == 2 else None)
    # On CPU the error leaves update 3 unfinished; on GPU it comes from
    # the guard's once-per-iteration check, after update 3.
    assert trainer.updater.iteration == finished
    assert guard.findings == [error]
    assert guard.hook.updater is None
    assert_released(trainer)


def test_names_the_first_link_and_iteration(trainer_factory):
    check_forward_culprit(trainer_factory(), finished=2)


@pytest.mark.gpu
def test_names_the_first_link_and_iteration_gpu(trainer_factory):
    check_forward_culprit(trainer_factory(device='@cupy:0'), finished=3)


class SqrtMLP(chainer.Chain):
    """l2 takes the square root of ReLU's output: Inf gradient at 0."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 8)
            self.l2 = L.Linear(8, 3)

    def forward(self, x):
        return self.l2(F.sqrt(F.relu(self.l1(x))))


def test_backward_culprit(trainer_factory):
    trainer = trainer_factory(model=L.Classifier(SqrtMLP()))
    trainer.extend(NonFiniteGuard())
    with pytest.raises(NonFiniteError) as info, \
            numpy.errstate(divide='ignore', invalid='ignore'):
        trainer.run()
    error = info.value
    assert (error.link, error.iteration, error.phase, error.output) == (
        'main/predictor', 1, 'backward',
        'gradient w.r.t. output 0 of ReLU')
    assert error.hint.endswith(
        "the previous backward step was sqrt (link 'main/predictor')")
    assert_released(trainer)


class SqrtScale(chainer.Link):
    """``x * sqrt(s)``: finite forward at ``s = 0``, Inf gradient w.r.t. s."""

    def __init__(self, n):
        super().__init__()
        with self.init_scope():
            self.s = chainer.Parameter(numpy.zeros(n, numpy.float32))

    def forward(self, x):
        return x * F.broadcast_to(F.sqrt(self.s), x.shape)


class ScaledMLP(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 8)
            self.scale = SqrtScale(8)
            self.l2 = L.Linear(8, 3)

    def forward(self, x):
        return self.l2(self.scale(self.l1(x)))


def check_parameter_gradient(trainer, finished):
    guard = NonFiniteGuard()
    trainer.extend(guard)
    model = trainer.updater.get_optimizer('main').target
    with pytest.raises(NonFiniteError) as info, \
            numpy.errstate(divide='ignore', invalid='ignore'):
        trainer.run()
    error = info.value
    assert (error.link, error.iteration, error.phase, error.output,
            error.param) == (
        'main/predictor/scale', 1, 'backward', 'gradient w.r.t. parameter s',
        'main/predictor/scale/s')
    assert str(error).startswith(
        "Inf in the backward of link 'main/predictor/scale' at iteration 1: "
        'gradient w.r.t. parameter s; ')
    assert 'main/predictor/scale/s' in str(error)
    # On CPU the update that would apply the Inf did not run.
    assert trainer.updater.iteration == finished
    assert numpy.isfinite(
        chainer.backend.CpuDevice().send(model.predictor.scale.s.array)
    ).all() == (finished == 0)
    assert_released(trainer)
    assert trainer.updater.get_optimizer('main')._hookable \
        ._pre_update_hooks == {}


def test_parameter_gradient_in_its_iteration(trainer_factory):
    trainer = trainer_factory(model=L.Classifier(ScaledMLP()))
    check_parameter_gradient(trainer, finished=0)


@pytest.mark.gpu
def test_parameter_gradient_in_its_iteration_gpu(trainer_factory):
    trainer = trainer_factory(model=L.Classifier(ScaledMLP()),
                              device='@cupy:0')
    check_parameter_gradient(trainer, finished=1)


@pytest.mark.parametrize('links,backward,found', [
    # scale is out of l1's scope: l1 sees the NaN of iteration 2 only.
    ('l1', True, [('main/predictor/l1', 2, 'backward')]),
    (None, False, [('main/predictor/scale', 2, 'forward')]),  # forward only
])
def test_parameter_gradients_follow_scope_and_backward(
        trainer_factory, links, backward, found):
    trainer = trainer_factory(model=L.Classifier(ScaledMLP()),
                              stop=(2, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    guard = NonFiniteGuard(links and getattr(model.predictor, links),
                           backward=backward, action='report')
    trainer.extend(guard)
    with numpy.errstate(divide='ignore', invalid='ignore'):
        trainer.run()
    assert [(e.link, e.iteration, e.phase)
            for e in guard.findings][:1] == found
    assert_released(trainer)


def pre_update_hooks(trainer):
    return list(trainer.updater.get_optimizer('main')._hookable
                ._pre_update_hooks)


@pytest.mark.parametrize('way_out', [
    None, Boom, KeyboardInterrupt, 'initialize'])
def test_optimizer_hook_only_while_the_loop_runs(trainer_factory, way_out):
    trainer = trainer_factory()
    trainer.extend(NonFiniteGuard())
    seen = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        seen.append(pre_update_hooks(trainer))
        if way_out in (Boom, KeyboardInterrupt):
            raise way_out()
    trainer.extend(look)
    if way_out == 'initialize':
        trainer.extend(FailingInit())
        way_out = Boom
    if way_out is None:
        trainer.run()
    else:
        with pytest.raises(way_out):
            trainer.run()
    assert all(hooks == ['chainer_hookext.NonFiniteGuard'] for hooks in seen)
    assert pre_update_hooks(trainer) == []
    assert_released(trainer)


def test_report_goes_on_and_logs_counts(trainer_factory):
    trainer = trainer_factory(stop=(4, 'iteration'))
    guard = NonFiniteGuard(action='report', backward=False)
    trainer.extend(guard)
    trainer.extend(poison_after(2))
    seen = []

    @training.make_extension(trigger=(1, 'iteration'))
    def read(trainer):
        seen.append(sorted(k for k in trainer.observation
                           if k.endswith('non_finite')))
    trainer.extend(read)
    trainer.run()
    assert seen[:2] == [[], []]
    assert seen[2] == [
        'main/out/non_finite', 'main/predictor/l2/out/non_finite',
        'main/predictor/out/non_finite']
    assert [e.link for e in guard.findings] == [
        'main/predictor/l2', 'main/predictor', 'main', 'main/predictor/l1']
    assert_released(trainer)


def test_warn_reaches_log_report(trainer_factory):
    trainer = trainer_factory(stop=(4, 'iteration'))
    trainer.extend(NonFiniteGuard(action='warn'))
    trainer.extend(poison_after(3))
    log = extensions.LogReport(trigger=(4, 'iteration'))
    trainer.extend(log)
    with pytest.warns(RuntimeWarning, match='at iteration 4'):
        trainer.run()
    assert log.log[0]['main/predictor/l2/out/non_finite'] == 1


@pytest.mark.parametrize('eval,raises', [(True, True), (False, False)])
def test_evaluation_mode(trainer_factory, eval, raises):

    class NaNInEval(chainer.Link):
        def forward(self, x):
            return x if chainer.config.train else x * numpy.float32('nan')

    class Net(chainer.Chain):
        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.l1 = L.Linear(4, 3)
                self.odd = NaNInEval()

        def forward(self, x):
            return self.odd(self.l1(x))

    trainer = trainer_factory(model=L.Classifier(Net()), evaluator=True)
    trainer.extend(NonFiniteGuard(eval=eval), trigger=(1, 'iteration'))
    if not raises:
        trainer.run()
        return
    with pytest.raises(NonFiniteError) as info:
        trainer.run()
    # Evaluator runs after update 4 (one epoch), in evaluation mode.
    assert (info.value.link, info.value.iteration, info.value.mode) == (
        'main/predictor/odd', 4, 'evaluation')
    assert str(info.value).startswith(
        "NaN in the forward of link 'main/predictor/odd' in evaluation after "
        'iteration 4: output')


def test_links_limit_the_scope(trainer_factory):
    trainer = trainer_factory(stop=(3, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(NonFiniteGuard(model.predictor.l1, backward=False))
    trainer.extend(poison_after(2))
    trainer.run()  # l2 and its parents are not checked
    assert numpy.isnan(model.predictor.l1.W.array).any()
    assert_released(trainer)


class MyGuard(NonFiniteGuard):
    pass


@pytest.mark.parametrize('cls', [NonFiniteGuard, MyGuard])
@pytest.mark.parametrize('kwargs,shown', [
    ({'backward': 'no'}, "backward='no'"),
    ({'train': 'yes'}, "train='yes'"),
    ({'eval': None}, 'eval=None'),
])
def test_flags_need_true_or_false(cls, kwargs, shown):
    with pytest.raises(TypeError, match=r'`{}\({}\)` is not a flag: use '
                       'True or False'.format(cls.__name__, shown)):
        cls(**kwargs)


def test_bad_arguments():
    with pytest.raises(ValueError,
                       match=r"`NonFiniteGuard\(action='ignore'\)`"):
        NonFiniteGuard(action='ignore')
    with pytest.raises(ValueError, match=r"`MyGuard\(action='ignore'\)`"):
        MyGuard(action='ignore')
    with pytest.raises(ValueError, match=r'`NonFiniteGuard\(train=False, '
                                         r'eval=False\)` would never fire'):
        NonFiniteGuard(train=False, eval=False)

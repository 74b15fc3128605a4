import pickle
import types
import warnings

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext import NonFiniteError
from chainer_hookext import NonFiniteHook
from tests.conftest import MLP
from tests.conftest import hook_keys


class Scale(chainer.Link):
    """Returns ``x * factor``; ``factor`` may hold NaN or Inf."""

    def __init__(self, factor, outputs='single'):
        super().__init__()
        self.factor = numpy.float32(factor)
        self.outputs = outputs

    def forward(self, x):
        y = x * self.factor
        if self.outputs == 'tuple':
            return x.astype(numpy.int32), x, y
        if self.outputs == 'dict':
            return {'a': x, 'b': y}
        return y


class SqrtScale(chainer.Link):
    """``x * sqrt(s)``: finite forward at ``s = 0``, Inf gradient w.r.t. s.

    No function of a hooked link receives the Inf: it goes straight into
    the parameter's gradient.
    """

    def __init__(self, n=3):
        super().__init__()
        with self.init_scope():
            self.s = chainer.Parameter(numpy.zeros(n, numpy.float32))

    def forward(self, x):
        return x * F.broadcast_to(F.sqrt(self.s), x.shape)


class SqrtNet(chainer.Chain):
    """Finite forward, Inf gradient: d sqrt(h) / dh at h = 0."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(3, 2, initialW=0, nobias=True)

    def forward(self, x):
        return F.sum(F.sqrt(self.l1(x)))


def device_of(xp):
    return chainer.get_device('@numpy' if xp == 'numpy' else '@cupy:0')


def nan_mlp(xp, layer='l2'):
    model = MLP()
    getattr(model, layer).W.array[0, 0] = numpy.nan
    model.to_device(device_of(xp))
    return model, device_of(xp).send(numpy.ones((2, 4), numpy.float32))


def check_forward_nan(xp, deferred):
    model, x = nan_mlp(xp)
    hook = NonFiniteHook(deferred=deferred)
    with pytest.raises(NonFiniteError) as info:
        with hook:
            model(x)
            hook.check()
    error = info.value
    assert (error.link, error.phase, error.output, error.kind,
            error.iteration) == ('MLP/l2', 'forward', 'output', 'NaN', None)
    # Found at once, the error also says where the NaN comes from: not the
    # inputs, the parameter W.
    at_once = not (deferred or (deferred is None and xp != 'numpy'))
    hint = ('its parameter W is non-finite: look at what last wrote it (an '
            'update, a loaded snapshot)') if at_once else ''
    assert error.hint == hint
    assert error.param == ('MLP/l2/W' if at_once else None)
    assert error.mode == 'training'
    assert str(error) == "NaN in the forward of link 'MLP/l2': output" + (
        '; ' + hint if hint else '')
    assert hook.findings == [error]
    assert chainer.get_function_hooks() == {}


@pytest.mark.parametrize('deferred', [None, True, False])
def test_forward_nan_names_the_link(deferred):
    check_forward_nan('numpy', deferred)


@pytest.mark.gpu
@pytest.mark.parametrize('deferred', [None, False])
def test_forward_nan_names_the_link_gpu(deferred):
    check_forward_nan('cupy', deferred)


def test_cpu_error_is_raised_from_the_culprits_call():
    model, x = nan_mlp('numpy')
    with pytest.raises(NonFiniteError) as info:
        with NonFiniteHook():
            model(x)
    names = [frame.name for frame in info.traceback]
    assert 'forward_postprocess' in names


@pytest.mark.parametrize('factor,kind', [
    (numpy.nan, 'NaN'), (numpy.inf, 'Inf')])
def test_kinds(factor, kind):
    with pytest.raises(NonFiniteError, match='^{} in'.format(kind)):
        with NonFiniteHook():
            Scale(factor)(numpy.ones((2, 3), numpy.float32))


def test_nan_and_inf():
    x = numpy.array([numpy.nan, numpy.inf], numpy.float32)
    with pytest.raises(NonFiniteError, match='^NaN and Inf in'):
        with NonFiniteHook():
            Scale(1)(x)


def test_hint_says_the_input_was_already_non_finite():
    model, x = nan_mlp('numpy')
    with pytest.raises(NonFiniteError) as info:
        with NonFiniteHook():
            model.l1(x * numpy.float32('nan'), n_batch_axes=1)
    assert info.value.hint == (
        "its input args[0] was already non-finite: look before this link")


@pytest.mark.parametrize('outputs,which', [
    ('tuple', 'output[2]'), ('dict', "output['b']")])
def test_names_which_output(outputs, which):
    with pytest.raises(NonFiniteError) as info:
        with NonFiniteHook():
            Scale(numpy.nan, outputs)(numpy.ones((2, 3), numpy.float32))
    assert info.value.output == which


def check_backward(xp):
    model = SqrtNet()
    model.to_device(device_of(xp))
    x = device_of(xp).send(numpy.ones((2, 3), numpy.float32))
    hook = NonFiniteHook(action='report')
    with hook, numpy.errstate(divide='ignore', invalid='ignore'):
        loss = model(x)
        loss.backward()
        hook.check()
    first = hook.findings[0]
    assert (first.link, first.phase, first.output, first.kind) == (
        'SqrtNet/l1', 'backward', 'gradient w.r.t. output 0 of '
        'LinearFunction', 'Inf')
    assert first.hint == (
        'it was computed by the backward of the functions using that output; '
        "the previous backward step was sqrt (link 'SqrtNet')")
    assert hook.counts == {('SqrtNet/l1', 'grad'): 1}


def test_backward_names_the_link_and_gradient():
    check_backward('numpy')


@pytest.mark.gpu
def test_backward_names_the_link_and_gradient_gpu():
    check_backward('cupy')


def test_backward_false_checks_forward_only():
    hook = NonFiniteHook(backward=False, action='report')
    with hook, numpy.errstate(divide='ignore', invalid='ignore'):
        assert chainer.get_function_hooks() == {}
        SqrtNet()(numpy.ones((2, 3), numpy.float32)).backward()
    assert hook.findings == []


def test_deferred_acts_in_call_order():
    model, x = nan_mlp('numpy', layer='l1')
    hook = NonFiniteHook(deferred=True, action='report')
    with hook:
        model(x)
        assert hook.findings == []
        found = hook.check()
    assert [e.link for e in found] == ['MLP/l1', 'MLP/l2', 'MLP']
    assert hook.check() == []


def test_warn_once_per_place_and_count_every_time():
    hook = NonFiniteHook(action='warn')
    link = Scale(numpy.nan)
    with hook:
        with pytest.warns(RuntimeWarning, match="link 'Scale'"):
            link(numpy.ones((1, 2), numpy.float32))
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            link(numpy.ones((1, 2), numpy.float32))
    assert len(hook.findings) == 1
    assert hook.pop_counts() == {('Scale', 'out'): 2}
    assert hook.counts == {}


@pytest.mark.parametrize('train,eval,raises', [
    (True, False, [True, False]),
    (False, True, [False, True]),
])
def test_mode_gating(train, eval, raises):
    link = Scale(numpy.nan)
    for mode, expected in zip((True, False), raises):
        hook = NonFiniteHook(action='report', train=train, eval=eval)
        with hook, chainer.using_config('train', mode):
            link(numpy.ones((1, 2), numpy.float32))
        assert bool(hook.findings) == expected


def test_scope_names_and_filters():
    model, x = nan_mlp('numpy')
    hook = NonFiniteHook(action='report')
    hook.set_scope({id(model.l2): 'net/l2'})
    with hook:
        model(x)
    assert [e.link for e in hook.findings] == ['net/l2']
    hook = NonFiniteHook(action='report')
    hook.set_scope({id(model.l1): 'net/l1'})
    with hook:
        model(x)
    assert hook.findings == []


def test_local_hooks_share_one_function_hook():
    model, x = nan_mlp('numpy')
    hook = NonFiniteHook(action='report')
    model.l1.add_hook(hook)
    model.l2.add_hook(hook)
    assert hook_keys(chainer.get_function_hooks()) == [
        'chainer_hookext.OutputGrads']
    model(x)
    model.l1.delete_hook(hook.name)
    assert hook_keys(chainer.get_function_hooks()) == [
        'chainer_hookext.OutputGrads']
    model.l2.delete_hook(hook.name)
    assert chainer.get_function_hooks() == {}
    assert [e.link for e in hook.findings] == ['l2']


def test_removal_warns_about_unread_flags():
    with pytest.warns(RuntimeWarning, match='after the last check'):
        with NonFiniteHook(deferred=True):
            Scale(numpy.nan)(numpy.ones((1, 2), numpy.float32))


def test_iteration_from_updater():
    hook = NonFiniteHook(action='report')
    hook.updater = types.SimpleNamespace(iteration=4)
    link = Scale(numpy.nan)
    with hook:
        link(numpy.ones((1, 2), numpy.float32))
        with chainer.using_config('train', False):
            link(numpy.ones((2, 2), numpy.float32))
    # Training calls run inside update 5; evaluation after update 4.
    assert [e.iteration for e in hook.findings] == [5]
    assert hook.counts == {('Scale', 'out'): 2}


def test_error_pickles():
    error = NonFiniteError('main/l1', 3, 'forward', 'output', 'NaN')
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) == (
        "NaN in the forward of link 'main/l1' at iteration 3: output")
    assert isinstance(again, FloatingPointError)
    error = NonFiniteError('main/l1', 3, 'forward', 'output', 'NaN',
                           param='main/l1/W', mode='evaluation')
    again = pickle.loads(pickle.dumps(error))
    assert (again.param, again.mode) == ('main/l1/W', 'evaluation')
    assert str(again) == str(error)


def test_hint_names_a_non_finite_parameter():
    model, x = nan_mlp('numpy', layer='l1')
    hook = NonFiniteHook(action='report')
    with hook:
        model(x)
    first, _, chain = hook.findings
    assert (first.link, first.param) == ('MLP/l1', 'MLP/l1/W')
    assert first.hint.startswith('its parameter W is non-finite')
    # The chain's own output: its inputs are finite, a descendant's W not.
    assert (chain.link, chain.param) == ('MLP', 'MLP/l1/W')
    assert chain.hint.startswith('its parameter l1/W is non-finite')


def check_parameter_gradient(xp):
    link = SqrtScale()
    link.to_device(device_of(xp))
    x = device_of(xp).send(numpy.ones((2, 3), numpy.float32))
    hook = NonFiniteHook(action='report')
    with hook, numpy.errstate(divide='ignore', invalid='ignore'):
        F.sum(link(x)).backward()
        assert hook.findings == []  # no hooked function received the Inf
        hook.check_grads(link)
        hook.check()
    error, = hook.findings
    assert (error.link, error.phase, error.output, error.param, error.kind,
            error.mode) == ('SqrtScale', 'backward',
                            'gradient w.r.t. parameter s', 'SqrtScale/s',
                            'Inf', 'training')
    assert hook.counts == {('SqrtScale', 'grad'): 1}


def test_check_grads_names_the_parameter():
    check_parameter_gradient('numpy')


@pytest.mark.gpu
def test_check_grads_names_the_parameter_gpu():
    check_parameter_gradient('cupy')


def test_check_grads_follows_the_scope():
    model = MLP()
    model.cleargrads()  # Chainer starts gradients at NaN
    model.l1.W.grad = numpy.full_like(model.l1.W.array, numpy.nan)
    model.l2.W.grad = numpy.full_like(model.l2.W.array, numpy.inf)
    hook = NonFiniteHook(action='report')
    hook.set_scope({id(model.l2): 'main/l2'})
    hook.check_grads(model)
    assert [(e.link, e.param) for e in hook.findings] == [
        ('main/l2', 'main/l2/W')]


def test_hint_when_inputs_and_parameters_are_finite():
    class Log(chainer.Link):
        def forward(self, x):
            return F.log(x)
    with pytest.raises(NonFiniteError) as info:
        with NonFiniteHook(), numpy.errstate(divide='ignore'):
            Log()(numpy.zeros((1, 2), numpy.float32))
    assert (info.value.hint, info.value.param) == (
        "its inputs and parameters are finite: it arises in this link's "
        'forward', None)


def test_evaluation_findings_say_so():
    hook = NonFiniteHook()
    hook.updater = types.SimpleNamespace(iteration=4)
    with pytest.raises(NonFiniteError) as info:
        with hook, chainer.using_config('train', False):
            Scale(numpy.nan)(numpy.ones((1, 2), numpy.float32))
    assert (info.value.mode, info.value.iteration) == ('evaluation', 4)
    assert str(info.value).startswith(
        "NaN in the forward of link 'Scale' in evaluation after iteration 4:")


class MyHook(NonFiniteHook):
    pass


@pytest.mark.parametrize('kwargs,shown', [
    ({'backward': 'no'}, "backward='no'"),
    ({'backward': None}, 'backward=None'),
    ({'deferred': 1}, 'deferred=1'),
    ({'train': 'yes'}, "train='yes'"),
    ({'eval': 0}, 'eval=0'),
])
def test_flags_need_true_or_false(kwargs, shown):
    for cls in (NonFiniteHook, MyHook):
        with pytest.raises(TypeError, match=r'`{}\({}\)` is not a flag: '
                           'use True'.format(cls.__name__, shown)):
            cls(**kwargs)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"MyHook\(action='stop'\)"):
        MyHook(action='stop')
    with pytest.raises(ValueError, match=r"NonFiniteHook\(action='stop'\)"):
        NonFiniteHook(action='stop')
    with pytest.raises(TypeError, match=r"NonFiniteHook\(action=None\)` is "
                       r"not a str"):
        NonFiniteHook(action=None)
    with pytest.raises(TypeError, match=r"NonFiniteHook\(deferred='gpu'\)"):
        NonFiniteHook(deferred='gpu')
    with pytest.raises(ValueError,
                       match=r'`NonFiniteHook\(train=False, eval=False\)`'):
        NonFiniteHook(train=False, eval=False)

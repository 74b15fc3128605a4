import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext import CallbackHook
from chainer_hookext import ScopedLinkHook
from tests.conftest import MLP


def call(link, train=True):
    with chainer.using_config('train', train):
        return link(numpy.ones((2, 3), numpy.float32))


def test_prehook_and_posthook_get_link_args_and_out():
    link = L.Linear(3, 4)
    log = []
    hook = CallbackHook(
        prehook=lambda lk, a, k: log.append(('pre', lk, a[0].shape, k)),
        posthook=lambda lk, a, k, out: log.append(('post', lk, out.shape)))
    with hook:
        out = call(link)
    assert log == [('pre', link, (2, 3), {}), ('post', link, (2, 4))]
    assert out.shape == (2, 4)


@pytest.mark.parametrize('scoped', [False, True])
@pytest.mark.parametrize('train,eval,fired', [
    (True, True, [True, False]),
    (True, False, [True]),
    (False, True, [False]),
])
def test_mode_gating(train, eval, fired, scoped):
    modes = []
    hook = CallbackHook(
        prehook=lambda lk, a, k: modes.append(chainer.config.train),
        train=train, eval=eval)
    if scoped:
        # A scope in both modes narrows the hook's own, never widens them.
        hook.set_scope(None, train=True, eval=True)
    link = L.Linear(3, 4)
    with hook:
        call(link, train=True)
        call(link, train=False)
    assert modes == fired


def test_only_posthook():
    outs = []
    with CallbackHook(posthook=lambda lk, a, k, o: outs.append(o)):
        call(L.Linear(3, 1))
    assert len(outs) == 1


def test_name():
    assert CallbackHook(print).name == 'CallbackHook'
    assert CallbackHook(print, name='probe').name == 'probe'


def test_needs_a_callable():
    with pytest.raises(ValueError, match='has nothing to call'):
        CallbackHook()
    with pytest.raises(TypeError, match=r"prehook=3\b"):
        CallbackHook(prehook=3)
    with pytest.raises(TypeError, match=r"posthook='x'"):
        CallbackHook(posthook='x')
    with pytest.raises(ValueError, match='would never fire'):
        CallbackHook(print, train=False, eval=False)


class MyCallback(CallbackHook):
    pass


@pytest.mark.parametrize('cls', [CallbackHook, MyCallback])
@pytest.mark.parametrize('kwargs,shown,error', [
    ({'name': 3}, 'name=3', TypeError),
    ({'name': ''}, "name=''", ValueError),
    ({'train': 'yes'}, "train='yes'", TypeError),
])
def test_name_and_flags_are_checked(cls, kwargs, shown, error):
    with pytest.raises(error, match=r'`{}\({}\)` is not a '
                       .format(cls.__name__, shown)):
        cls(print, **kwargs)


def test_errors_name_the_class_called():
    with pytest.raises(TypeError, match=r'`MyCallback\(prehook=3\)`'):
        MyCallback(prehook=3)
    with pytest.raises(ValueError, match=r'`MyCallback\(prehook=None, '):
        MyCallback()


def test_is_a_scoped_link_hook():
    assert isinstance(CallbackHook(print), ScopedLinkHook)


def test_scope_limits_the_links():
    model = MLP()
    names = []
    hook = CallbackHook(posthook=lambda lk, a, k, o: names.append(lk.name))
    hook.set_scope({id(model.l1): 'net/l1'})
    with hook:
        model(numpy.ones((2, 4), numpy.float32))
    assert names == ['l1']


# -- backward: the gradients w.r.t. each call's outputs (issue 37) ----------

class ConvNet(chainer.Chain):
    """conv (1 -> 2 channels, 3x3) then ReLU then fc (8 -> 3)."""

    def __init__(self, forget=False):
        super().__init__()
        self.forget = forget
        with self.init_scope():
            self.conv = L.Convolution2D(1, 2, 3)
            self.fc = L.Linear(8, 3)

    def forward(self, x):
        h = F.relu(self.conv(x))
        if self.forget:
            return F.forget(self.fc, h)
        return self.fc(h)


def conv_net_case(xp=numpy, forget=False):
    """The net, its input, the loss's weights and the analytic gradients
    w.r.t. fc's output (``w``), fc's input and conv's output."""
    numpy.random.seed(0)
    model = ConvNet(forget)
    device = chainer.get_device('@numpy' if xp is numpy else '@cupy:0')
    model.to_device(device)
    rng = numpy.random.RandomState(1)
    x = rng.randn(2, 1, 4, 4).astype(numpy.float32)
    w = rng.rand(2, 3).astype(numpy.float32)
    with chainer.no_backprop_mode():
        conv_out = chainer.backend.CpuDevice().send(
            model.conv(device.send(x)).array)
    fc_w = chainer.backend.CpuDevice().send(model.fc.W.array)
    grad_h = (w @ fc_w).reshape(conv_out.shape)
    grad_conv = grad_h * (conv_out > 0)
    return model, device.send(x), device.send(w), {
        'fc': w, 'fc_input': grad_h, 'conv': grad_conv}


def host(array):
    return None if array is None else chainer.backend.CpuDevice().send(array)


def check_gradients_are_the_analytic_ones(xp, forget=False):
    model, x, w, expected = conv_net_case(xp, forget)
    seen = []
    hook = CallbackHook(backward=lambda link, grad_outputs, grad_inputs: (
        seen.append((link, grad_outputs, grad_inputs))),
        grad_inputs=True)
    with hook:
        F.sum(model(x) * w).backward()
        # In backward order: the model's output is fc's.
        assert [link for link, _, _ in seen] == [
            model, model.fc, model.conv]
    (_, model_out, _), (_, fc_out, fc_in), (_, conv_out, conv_in) = seen
    numpy.testing.assert_allclose(host(model_out[0]), expected['fc'])
    numpy.testing.assert_allclose(host(fc_out[0]), expected['fc'])
    numpy.testing.assert_allclose(host(conv_out[0]), expected['conv'],
                                  rtol=1e-5, atol=1e-7)
    assert len(fc_out) == len(conv_out) == 1
    if forget:  # the recomputation's input: a copy no function created
        assert fc_in == (None,)
    else:
        numpy.testing.assert_allclose(host(fc_in[0]), expected['fc_input'],
                                      rtol=1e-5, atol=1e-7)
    assert conv_in == (None,)  # a raw array


@pytest.mark.parametrize('forget', [False, True])
def test_backward_gets_the_analytic_gradients(forget):
    check_gradients_are_the_analytic_ones(numpy, forget)


@pytest.mark.gpu
@pytest.mark.parametrize('forget', [False, True])
def test_backward_gets_the_analytic_gradients_gpu(forget):
    import cupy
    check_gradients_are_the_analytic_ones(cupy, forget)


def test_backward_without_grad_inputs_gets_two_arguments():
    model, x, w, expected = conv_net_case()
    seen = []
    with CallbackHook(backward=lambda *args: seen.append(args)):
        F.sum(model(x) * w).backward()
    assert [(args[0], len(args)) for args in seen] == [
        (model, 2), (model.fc, 2), (model.conv, 2)]


def test_link_called_twice_gets_two_callbacks():
    fc = L.Linear(2, 3)
    rng = numpy.random.RandomState(0)
    x1, x2 = (rng.randn(1, 2).astype(numpy.float32) for _ in range(2))
    w = rng.rand(1, 3).astype(numpy.float32) + 1
    seen = []
    with CallbackHook(backward=lambda link, g: seen.append(g[0])):
        F.sum((fc(x1) + 2 * fc(x2)) * w).backward()
    assert len(seen) == 2
    first, second = sorted(seen, key=lambda g: g.sum())
    numpy.testing.assert_allclose(first, w)
    numpy.testing.assert_allclose(second, 2 * w)


class Split(chainer.Link):
    """Two outputs of one node."""

    def forward(self, x):
        return F.split_axis(x * 1, 2, axis=1)


class Two(chainer.Link):
    """Two outputs of two nodes, and an integer array."""

    def forward(self, x):
        return x * 2, {'index': numpy.arange(2), 'y': x * 3}


def test_output_without_gradient_is_none():
    x = chainer.Variable(numpy.ones((1, 4), numpy.float32))
    seen = []
    with CallbackHook(backward=lambda link, g: seen.append(g)):
        a, b = Split()(x)
        F.sum(a * 5).backward()
        # One node: its step gives both outputs' gradients at once.
        assert len(seen) == 1
    numpy.testing.assert_array_equal(seen[0][0], [[5, 5]])
    assert seen[0][1] is None


def test_output_whose_node_is_never_stepped():
    x = chainer.Variable(numpy.ones((1, 2), numpy.float32))
    link = Two()
    seen = []
    hook = CallbackHook(backward=lambda lk, g: seen.append(g))
    with hook:
        a, d = link(x)
        F.sum(a).backward()
        assert seen == []  # d['y']'s node may yet be stepped
        link(x)  # the next forward: that backward is over
        assert len(seen) == 1
        numpy.testing.assert_array_equal(seen[0][0], [[1, 1]])
        assert seen[0][1:] == (None, None)
        a, d = link(x)
        F.sum(d['y']).backward()
    # Removing the hook does the call left waiting.
    assert len(seen) == 2
    assert seen[1][0] is None and seen[1][1] is None
    numpy.testing.assert_array_equal(seen[1][2], [[1, 1]])


def test_no_graph_no_callback():
    seen = []
    link = L.Linear(3, 2)
    with CallbackHook(backward=lambda lk, g: seen.append(g)):
        with chainer.no_backprop_mode():
            link(numpy.ones((1, 3), numpy.float32))
        y = link(numpy.ones((1, 3), numpy.float32))  # never backward
        del y
    assert seen == []


@pytest.mark.parametrize('train,eval,modes', [
    (True, True, [True, False]), (True, False, [True]),
    (False, True, [False])])
def test_backward_follows_the_modes(train, eval, modes):
    link = L.Linear(3, 2)
    seen = []
    hook = CallbackHook(backward=lambda lk, g: seen.append(g[0].sum()),
                        train=train, eval=eval)
    with hook:
        for mode in (True, False):
            with chainer.using_config('train', mode):
                y = link(numpy.ones((1, 3), numpy.float32))
            F.sum(y * (1 if mode else 10)).backward()
    assert seen == [2.0 if mode else 20.0 for mode in modes]


def test_backward_follows_the_scope():
    model = MLP()
    names = []
    hook = CallbackHook(backward=lambda lk, g: names.append(lk.name))
    hook.set_scope({id(model.l1): 'net/l1'})
    with hook:
        F.sum(model(numpy.ones((2, 4), numpy.float32))).backward()
    assert names == ['l1']


def test_callback_cannot_write_into_numpy_gradients():
    def write(link, grad_outputs):
        grad_outputs[0][...] = 0
    link = L.Linear(3, 2)
    with CallbackHook(backward=write):
        y = link(numpy.ones((1, 3), numpy.float32))
        with pytest.raises(ValueError, match='read-only'):
            F.sum(y).backward()


def test_statistics_are_read_before_the_callback():
    from chainer_hookext import GradientStatisticsHook
    stats = GradientStatisticsHook(statistics=('max',))
    seen = []
    hook = CallbackHook(
        backward=lambda link, g: seen.append(stats.statistics()))
    link = L.Linear(3, 2)
    with hook, stats:  # the callback's hook first, whatever the order
        F.sum(link(numpy.ones((1, 3), numpy.float32)) * 7).backward()
    assert seen == [{'Linear/grad/max': 7.0}]


def test_backward_hooks_share_one_function_hook():
    from chainer_hookext import GradientStatisticsHook
    from chainer_hookext import NonFiniteHook
    from tests.conftest import hook_keys
    hooks = [CallbackHook(backward=print),
             CallbackHook(backward=print, name='b'),
             GradientStatisticsHook(), NonFiniteHook()]
    for hook in hooks:
        hook.__enter__()
    assert hook_keys(chainer.get_function_hooks()) == [
        'chainer_hookext.OutputGrads']
    for hook in hooks:
        hook.__exit__(None, None, None)
    assert chainer.get_function_hooks() == {}


def test_backward_arguments_are_checked():
    with pytest.raises(TypeError, match=r"`CallbackHook\(backward=3\)` is "
                                        'not callable'):
        CallbackHook(backward=3)
    with pytest.raises(TypeError, match=r"`CallbackHook\(grad_inputs='yes'"
                                        r'\)` is not a flag'):
        CallbackHook(backward=print, grad_inputs='yes')
    with pytest.raises(ValueError, match=r'`MyCallback\(grad_inputs=True\)` '
                                         'without backward='):
        MyCallback(print, grad_inputs=True)
    assert CallbackHook(backward=print).backward is print

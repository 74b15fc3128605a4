import gc
import weakref

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext import CallbackHook
from chainer_hookext import GradientStatisticsHook
from chainer_hookext.link_hooks import gradient_statistics
from tests.conftest import Boom
from tests.conftest import hook_keys
from tests.conftest import MLP
from tests.conftest import registered_hooks


def expected(arrays):
    x = numpy.concatenate([numpy.asarray(a, numpy.float64).ravel()
                           for a in arrays])
    norms = [numpy.linalg.norm(numpy.asarray(a, numpy.float64))
             for a in arrays]
    return {'mean': x.mean(), 'std': x.std(), 'min': x.min(),
            'max': x.max(), 'zero_fraction': numpy.mean(x == 0),
            'norm': numpy.mean(norms)}


def train_mlp(xp, calls, hooks):
    """Runs ``calls`` forward and backward of an MLP under ``hooks``;
    returns the model and the gradients w.r.t. each call of l1 and l2, on
    the host, as a CallbackHook sees them."""
    device = chainer.get_device('@numpy' if xp == 'numpy' else '@cupy:0')
    rng = numpy.random.RandomState(0)
    numpy.random.seed(0)
    model = MLP()
    model.to_device(device)
    grads = {'l1': [], 'l2': []}
    seen = CallbackHook(backward=lambda link, g: grads[link.name].append(
        chainer.backend.CpuDevice().send(g[0]).copy()))
    seen.set_scope({id(model.l1): 'l1', id(model.l2): 'l2'})
    with seen:
        for hook in hooks:
            hook.__enter__()
        try:
            for _ in range(calls):
                x = rng.randn(5, 4).astype(numpy.float32)
                w = rng.randn(5, 3).astype(numpy.float32)
                F.sum(model(device.send(x)) * device.send(w)).backward()
        finally:
            for hook in reversed(hooks):
                hook.__exit__(None, None, None)
    return model, grads


def check_matches_numpy(xp, calls):
    hook = GradientStatisticsHook()
    model, grads = train_mlp(xp, calls, [hook])
    stats = hook.statistics()
    assert sorted(stats) == sorted(
        '{}/grad/{}'.format(link, s) for link in ('MLP', 'MLP/l1', 'MLP/l2')
        for s in gradient_statistics.STATISTICS)
    for link in ('l1', 'l2'):
        ref = expected(grads[link])
        assert len(grads[link]) == calls
        for stat, value in ref.items():
            got = stats['MLP/{}/grad/{}'.format(link, stat)]
            assert got == pytest.approx(value, rel=1e-5, abs=1e-7), stat
            assert isinstance(got, float)
    # l1's outputs go through ReLU: the dead units' gradients are zeros.
    assert stats['MLP/l1/grad/zero_fraction'] > 0


# 70 calls fold the per-call rows into the running row once.
@pytest.mark.parametrize('calls', [1, 3, 70])
def test_matches_numpy(calls):
    check_matches_numpy('numpy', calls)


@pytest.mark.gpu
@pytest.mark.parametrize('calls', [3, 70])
def test_matches_numpy_gpu(calls):
    check_matches_numpy('cupy', calls)


class Scale(chainer.Link):
    """Multiplies its input by a constant: the gradient w.r.t. its input
    is ``scale`` times the one w.r.t. its output."""

    def __init__(self, scale=1.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


class Twice(chainer.Chain):
    """Calls ``inner`` twice, the second time through ``F.forget`` when
    ``forget``."""

    def __init__(self, forget=False):
        super().__init__()
        self.forget = forget
        with self.init_scope():
            self.inner = L.Linear(2, 2, initialW=numpy.eye(2), nobias=True)

    def forward(self, x):
        h = self.inner(x)
        return F.forget(self.inner, h) if self.forget else self.inner(h)


@pytest.mark.parametrize('forget', [False, True])
def test_link_called_twice_and_forget(forget):
    hook = GradientStatisticsHook(statistics=('max', 'norm'))
    model = Twice(forget)
    # Names from a scope, as in a trainer: without one, F.forget's
    # recomputation (run by backward, outside the parent's forward) names
    # the link after itself.
    hook.set_scope({id(model): 'm', id(model.inner): 'm/inner'})
    x = chainer.Variable(numpy.ones((1, 2), numpy.float32))
    w = numpy.array([[3, 4]], numpy.float32)
    with hook:
        F.sum(model(x) * w).backward()
    # W = I: each call's output gets the gradient w, norm 5; the inner
    # link's two calls count once each.
    assert hook.statistics() == {
        'm/grad/max': 4.0, 'm/grad/norm': 5.0,
        'm/inner/grad/max': 4.0, 'm/inner/grad/norm': 5.0}
    assert hook._table.running['m/inner', ()].calls == 2


def run_scale(hook, grads):
    """Each of ``grads`` the gradient w.r.t. one call of a Scale link."""
    link = Scale()
    with hook:
        for grad in grads:
            x = chainer.Variable(numpy.zeros(grad.shape, numpy.float32))
            F.sum(link(x) * grad).backward()


def test_norm_exact_for_gradients_far_smaller_than_the_first():
    # The first gradient's mean (1000) is the shift of the key's running
    # sums; the norm of the later ones (about 0.06) is not to be derived
    # from their sums less the shift, where it would lose most of its
    # digits (and a part in a million of the average).
    rng = numpy.random.RandomState(0)
    grads = [numpy.full(1, 1000, numpy.float32)] + [
        (1e-3 * rng.randn(4096)).astype(numpy.float32) for _ in range(3)]
    hook = GradientStatisticsHook()
    run_scale(hook, grads)
    stats = hook.statistics()
    ref = expected(grads)
    for stat in ('norm', 'mean', 'std', 'min', 'max'):
        assert stats['Scale/grad/' + stat] == pytest.approx(
            ref[stat], rel=1e-9), stat


def test_second_backward_over_the_graph_adds_nothing():
    hook = GradientStatisticsHook(statistics=('mean', 'norm'))
    x = chainer.Variable(numpy.ones((1, 2), numpy.float32))
    with hook:
        loss = F.sum(Scale()(x) * numpy.array([[3, 4]], numpy.float32))
        loss.backward(retain_grad=True)
        loss.backward()
    assert hook.statistics() == {
        'Scale/grad/mean': 3.5, 'Scale/grad/norm': 5.0}


class Two(chainer.Link):
    def forward(self, x):
        return x * 2, {'index': numpy.arange(2), 'y': x * 3}


def test_keys_of_structured_outputs_and_unused_outputs():
    hook = GradientStatisticsHook(statistics=('max',))
    x = chainer.Variable(numpy.ones((1, 2), numpy.float32))
    with hook:
        a, d = Two()(x)
        F.sum(a * 5).backward()
        assert hook.statistics() == {'Two/grad/0/max': 5.0}
        a, d = Two()(x)
        F.sum(d['y'] * 6).backward()
    # The integer array has no gradient; an unused output adds nothing.
    assert hook.statistics() == {'Two/grad/0/max': 5.0,
                                 'Two/grad/1/y/max': 6.0}


def test_train_mode_only_by_default():
    hook = GradientStatisticsHook(statistics=('mean',))
    link = Scale()
    x = chainer.Variable(numpy.ones((1, 2), numpy.float32))
    with hook:
        F.sum(link(x)).backward()
        with chainer.using_config('train', False):
            F.sum(link(x) * 10).backward()
    assert hook.statistics() == {'Scale/grad/mean': 1.0}


def test_no_graph_nothing_added():
    hook = GradientStatisticsHook()
    with hook, chainer.no_backprop_mode():
        L.Linear(2, 2)(numpy.ones((1, 2), numpy.float32))
    assert hook.statistics() == {}


def test_gradients_not_kept_and_reset():
    hook = GradientStatisticsHook()
    grads = []
    link = L.Linear(3, 2)
    with hook, CallbackHook(backward=lambda lk, g: grads.append(
            weakref.ref(g[0].base))):
        F.sum(link(numpy.ones((1, 3), numpy.float32))).backward()
    gc.collect()
    assert len(grads) == 1 and grads[0]() is None
    assert hook.statistics()
    hook.reset()
    assert hook.statistics() == {}


def test_nothing_left_on_every_way_out():
    model = MLP()
    hook = GradientStatisticsHook()
    with pytest.raises(Boom):
        with hook:
            F.sum(model(numpy.ones((1, 4), numpy.float32))).backward()
            raise Boom('inside')
    assert hook_keys(chainer.get_function_hooks()) == []
    assert registered_hooks(model) == []
    with hook:
        pass
    assert hook_keys(chainer.get_function_hooks()) == []


def test_keys_apart_from_non_finite_guard():
    from chainer_hookext.report import keys
    guard = keys.non_finite_key('main/l1', 'grad')
    assert guard not in {keys.gradient_key('main/l1', output, s)
                         for output in ((), (0,), ('h',))
                         for s in gradient_statistics.STATISTICS}
    with pytest.raises(ValueError, match='non_finite'):
        keys.gradient_key('main/l1', (), 'non_finite')

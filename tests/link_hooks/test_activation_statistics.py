import gc
import weakref

import chainer
import chainer.links as L
import numpy
import pytest

from chainer_hookext import ActivationStatisticsHook
from chainer_hookext.link_hooks import activation_statistics
from tests.conftest import MLP


def expected(arrays):
    x = numpy.concatenate([numpy.asarray(a, numpy.float64).ravel()
                           for a in arrays])
    return {'mean': x.mean(), 'std': x.std(), 'min': x.min(),
            'max': x.max(), 'zero_fraction': numpy.mean(x == 0)}


def check_matches_numpy(xp, calls):
    device = chainer.get_device('@numpy' if xp == 'numpy' else '@cupy:0')
    rng = numpy.random.RandomState(0)
    model = MLP()
    model.to_device(device)
    hook = ActivationStatisticsHook()
    outputs = []
    with hook:
        for _ in range(calls):
            x = rng.randn(5, 4).astype(numpy.float32)
            x[x < 0] = 0  # zeros in the input: l1 sees them, ReLU makes more
            outputs.append(device.send(x))
            model.l1(outputs[-1])
    stats = hook.statistics()
    assert sorted(stats) == sorted(
        'l1/out/' + s for s in activation_statistics.STATISTICS)
    with chainer.using_config('enable_backprop', False):
        ref = expected([chainer.backend.CpuDevice().send(model.l1(x).array)
                        for x in outputs])
    for stat, value in ref.items():
        assert stats['l1/out/' + stat] == pytest.approx(
            value, rel=1e-5, abs=1e-6)
        assert isinstance(stats['l1/out/' + stat], float)


# 70 calls fold the per-call rows into the running row once.
@pytest.mark.parametrize('calls', [1, 3, 70])
def test_matches_numpy(calls):
    check_matches_numpy('numpy', calls)


@pytest.mark.gpu
@pytest.mark.parametrize('calls', [3, 70])
def test_matches_numpy_gpu(calls):
    check_matches_numpy('cupy', calls)


def check_std_of_large_offset(xp):
    # Mean 1000, std 1: sums of squares in float32 gave std 1.0671.
    rng = numpy.random.RandomState(0)
    x = (1000 + rng.randn(1000, 1000)).astype(numpy.float32)
    device = chainer.get_device('@numpy' if xp == 'numpy' else '@cupy:0')
    hook = ActivationStatisticsHook(statistics=('mean', 'std'))
    with hook:
        Pair()(device.send(x[:300]))  # two calls: the merge counts too
        Pair()(device.send(x[300:]))
    stats = hook.statistics()
    ref = x.astype(numpy.float64)
    assert stats['Pair/out/1/0/std'] == pytest.approx(ref.std(), rel=1e-3)
    assert stats['Pair/out/1/0/mean'] == pytest.approx(ref.mean(), rel=1e-9)


def test_std_of_large_offset():
    check_std_of_large_offset('numpy')


@pytest.mark.gpu
def test_std_of_large_offset_gpu():
    check_std_of_large_offset('cupy')


def test_names_and_zero_fraction_of_relu_net():
    model = MLP()
    hook = ActivationStatisticsHook(statistics=('zero_fraction',))
    model.l1.W.array[...] = -1
    model.l1.b.array[...] = 0
    with hook:
        model(numpy.ones((2, 4), numpy.float32))
    # l1 outputs -4 everywhere, ReLU kills it all: l2 (bias 0) and MLP
    # output only zeros.
    assert hook.statistics() == {
        'MLP/out/zero_fraction': 1.0,
        'MLP/l1/out/zero_fraction': 0.0,
        'MLP/l2/out/zero_fraction': 1.0,
    }


class Pair(chainer.Link):
    def forward(self, x):
        return {'double': x * 2, 'index': numpy.arange(3)}, (x, x[:0])


def test_keys_of_structured_outputs():
    hook = ActivationStatisticsHook(statistics=('max',))
    with hook:
        Pair()(numpy.ones((2, 2), numpy.float32))
    # Integer and empty arrays are skipped.
    assert hook.statistics() == {
        'Pair/out/0/double/max': 2.0, 'Pair/out/1/0/max': 1.0}


def test_float16_does_not_overflow():
    hook = ActivationStatisticsHook(statistics=('std', 'max'))
    x = numpy.full((4, 4), 300, numpy.float16)  # 300 ** 2 > float16 max
    with hook:
        Pair()(x)
    stats = hook.statistics()
    assert stats['Pair/out/1/0/std'] == 0.0
    assert stats['Pair/out/0/double/max'] == 600.0


def test_train_mode_only_by_default():
    hook = ActivationStatisticsHook(statistics=('mean',))
    link = L.Linear(2, 1, initialW=1, nobias=True)
    with hook:
        link(numpy.ones((1, 2), numpy.float32))
        with chainer.using_config('train', False):
            link(numpy.full((1, 2), 10, numpy.float32))
    assert hook.statistics() == {'Linear/out/mean': 2.0}


def test_reset_and_outputs_not_kept():
    hook = ActivationStatisticsHook()
    link = L.Linear(3, 2)
    with hook:
        y = link(numpy.ones((1, 3), numpy.float32))
    ref = weakref.ref(y.array)
    del y
    gc.collect()
    assert ref() is None
    assert hook.statistics()
    hook.reset()
    assert hook.statistics() == {}

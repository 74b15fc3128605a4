"""The statistics of one array in one pass: NumPy and CuPy give the same
figures (edge cases of the device kernel: NaN, float16, non-contiguous
arrays, arrays larger than one launch's grid)."""

import os
import shutil
import subprocess

import chainer
import numpy
import pytest

from chainer_hookext import ActivationStatisticsHook
from chainer_hookext import GradientStatisticsHook
from chainer_hookext.link_hooks import _device_statistics


class Echo(chainer.Link):
    """Returns what it is given: the hook sees that array."""

    def forward(self, x):
        return x


class Double(chainer.Link):

    def forward(self, x):
        return x * 2


def expected(arrays):
    x = numpy.concatenate([numpy.asarray(a, numpy.float64).ravel()
                           for a in arrays])
    return {'mean': x.mean(), 'std': x.std(), 'min': x.min(),
            'max': x.max(), 'zero_fraction': numpy.mean(x == 0)}


def statistics_of(xp, arrays):
    device = chainer.get_device('@numpy' if xp == 'numpy' else '@cupy:0')
    hook = ActivationStatisticsHook()
    with hook:
        for array in arrays:
            Echo()(device.send(array))
    return {k.split('/')[-1]: v for k, v in hook.statistics().items()}


def arrays_of(case):
    rng = numpy.random.RandomState(0)
    if case == 'float16':
        return [rng.randn(5, 7).astype(numpy.float16) for _ in range(3)]
    if case == 'float64':
        return [1e3 + rng.randn(40, 3) for _ in range(3)]
    if case == 'larger than a grid':
        # More elements than one launch's threads take in one step: each
        # thread loops; then a small array after it.
        n = 3 * _device_statistics.BLOCK * _device_statistics.PER_THREAD * (
            _device_statistics.MAX_BLOCKS) + 11
        big = rng.randn(n).astype(numpy.float32)
        big[::5] = 0
        return [rng.randn(3).astype(numpy.float32), big,
                numpy.zeros(1, numpy.float32)]
    raise ValueError(case)


CASES = ('float16', 'float64', 'larger than a grid')


def check_matches_numpy(xp, case):
    arrays = arrays_of(case)
    got = statistics_of(xp, arrays)
    for stat, value in expected(arrays).items():
        assert got[stat] == pytest.approx(value, rel=1e-9, abs=1e-12), stat


@pytest.mark.parametrize('case', CASES)
def test_matches_numpy(case):
    check_matches_numpy('numpy', case)


@pytest.mark.gpu
@pytest.mark.parametrize('case', CASES)
def test_matches_numpy_gpu(case):
    check_matches_numpy('cupy', case)


class EveryOther(chainer.Link):
    """Returns every other column of its input: a non-contiguous view."""

    def forward(self, x):
        return x[:, ::2]


def check_non_contiguous_and_nan(xp):
    device = chainer.get_device('@numpy' if xp == 'numpy' else '@cupy:0')
    x = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    hook = ActivationStatisticsHook(statistics=('mean', 'min', 'max'))
    with hook:
        EveryOther()(device.send(x))
    assert hook.statistics() == {
        'EveryOther/out/mean': 5.0, 'EveryOther/out/min': 0.0,
        'EveryOther/out/max': 10.0}
    x[1, 2] = numpy.nan  # a NaN makes min and max NaN, as numpy's
    with hook:
        EveryOther()(device.send(x))
    stats = hook.statistics()
    assert numpy.isnan(stats['EveryOther/out/min'])
    assert numpy.isnan(stats['EveryOther/out/max'])


def test_non_contiguous_and_nan():
    check_non_contiguous_and_nan('numpy')


@pytest.mark.gpu
def test_non_contiguous_and_nan_gpu():
    check_non_contiguous_and_nan('cupy')


@pytest.mark.gpu
def test_one_launch_per_array_gpu(monkeypatch):
    # Each array takes one launch of the kernel, and its key's first array
    # one more (the shift); the report copies once.
    import cupy
    launches = []
    kernel = _device_statistics._kernel
    monkeypatch.setattr(_device_statistics, '_kernel', lambda *a: (
        launches.append(a) or kernel(*a)))
    hook = GradientStatisticsHook(statistics=('norm',))
    x = chainer.Variable(cupy.ones((2, 3), numpy.float32))
    with hook:
        for _ in range(4):
            chainer.functions.sum(Double()(x) * 3).backward()
    assert len(launches) == 5
    assert hook.statistics() == {'Double/grad/norm': pytest.approx(
        numpy.sqrt(54.0))}


@pytest.mark.skipif(shutil.which('nvcc') is None, reason='needs nvcc')
def test_kernel_source_compiles(tmp_path):
    # The kernel compiles here without a device (CuPy compiles it with
    # NVRTC at the first CuPy array): no header, three entry points.
    source = tmp_path / 'statistics.cu'
    source.write_text(_device_statistics.SOURCE)
    done = subprocess.run(
        ['nvcc', '-arch=sm_80', '--ptx', '-o', str(tmp_path / 'out.ptx'),
         str(source)], capture_output=True, text=True, timeout=120,
        env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / 'out.ptx').read_text()
    assert [f'statistics_{t}' in ptx for t in (
        'float16', 'float32', 'float64')] == [True] * 3

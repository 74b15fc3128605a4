import chainer
import numpy
import pytest
from chainer.backends import cuda

from chainer_hookext.costs import peaks


def test_peaks_are_positive_and_measured_once(monkeypatch):
    first = peaks.measure(numpy, numpy.float32)
    assert first.flops > 0 and first.bandwidth > 0
    monkeypatch.setattr(peaks, '_measure', pytest.fail)
    assert peaks.measure(numpy, 'float32') is first


def test_each_dtype_has_its_own():
    assert peaks.measure(numpy, numpy.float64) is not peaks.measure(
        numpy, numpy.float32)


@pytest.mark.gpu
def test_gpu_peaks():
    if not cuda.available:
        pytest.skip('no CUDA')
    gpu = peaks.measure(cuda.cupy, numpy.float32)
    assert gpu.flops > 0 and gpu.bandwidth > 0


def check_measure_for(xp):
    param = chainer.Parameter(xp.zeros(3, numpy.float16))
    assert peaks.measure_for(param) is peaks.measure(xp, numpy.float16)
    assert peaks.measure_for(None) is peaks.measure(numpy, numpy.float32)


def test_measure_for_a_parameter_takes_its_dtype():
    check_measure_for(numpy)


@pytest.mark.gpu
def test_measure_for_a_gpu_parameter_takes_its_device():
    if not cuda.available:
        pytest.skip('no CUDA')
    check_measure_for(cuda.cupy)

import json
import os
import subprocess
import sys

import chainer
import numpy
import pytest
from chainer.backends import cuda

from chainer_hookext import TimedLinks
from chainer_hookext.costs import peaks
from tests.conftest import make_trainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


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


# -- kept per machine, device and dtype (issue 45, item 3) --------------------
def use_file(monkeypatch, path):
    monkeypatch.setenv(peaks.ENVIRONMENT, str(path))
    return path


def saved(path):
    with open(path, encoding='utf-8') as f:
        return json.load(f)['peaks']


def use_planted_peaks(monkeypatch, tmp_path, flops, bandwidth):
    # A file whose float32 NumPy peaks (under this machine's key, found by
    # a first measurement elsewhere) are ``flops`` and ``bandwidth``;
    # returns the file and the key.
    first = use_file(monkeypatch, tmp_path / 'first.json')
    peaks.measure(numpy, numpy.float32)
    [key] = saved(first)
    other = use_file(monkeypatch, tmp_path / 'other.json')
    other.write_text(json.dumps({'peaks': {
        key: {'flops': flops, 'bandwidth': bandwidth}}}))
    return other, key


def test_kept_in_the_file_named_by_the_environment(tmp_path, monkeypatch):
    path = use_file(monkeypatch, tmp_path / 'cache' / 'peaks.json')
    assert peaks.cache_path() == str(path)
    measured = peaks.measure(numpy, numpy.float64)
    [(key, entry)] = saved(path).items()
    assert key.endswith(' cpu float64')
    assert peaks.Peaks(entry['flops'], entry['bandwidth']) == measured
    assert entry['seconds'] >= 2 * peaks.SECONDS  # best of many repeats
    assert os.listdir(path.parent) == ['peaks.json']  # nothing left beside


def test_default_file_in_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.delenv(peaks.ENVIRONMENT)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    assert peaks.cache_path() == str(
        tmp_path / 'chainer_hookext' / 'peaks.json')
    monkeypatch.delenv('XDG_CACHE_HOME')
    monkeypatch.setenv('HOME', str(tmp_path))
    assert peaks.cache_path() == str(
        tmp_path / '.cache' / 'chainer_hookext' / 'peaks.json')


def test_the_file_is_read_and_measured_again_on_demand(tmp_path, monkeypatch):
    other, key = use_planted_peaks(monkeypatch, tmp_path, 1e11, 1e10)
    assert peaks.measure(numpy, numpy.float32) == peaks.Peaks(1e11, 1e10)
    again = peaks.measure(numpy, numpy.float32, again=True)
    assert again != peaks.Peaks(1e11, 1e10)
    assert saved(other)[key]['flops'] == again.flops
    assert peaks.measure(numpy, numpy.float32) is again


def test_the_same_peaks_in_every_process(tmp_path, monkeypatch):
    use_file(monkeypatch, tmp_path / 'peaks.json')
    script = ('from chainer_hookext.costs import peaks; '
              'print(tuple(peaks.measure()))')
    runs = [subprocess.run([sys.executable, '-c', script], check=True,
                           stdout=subprocess.PIPE, universal_newlines=True,
                           cwd=ROOT).stdout for _ in range(2)]
    assert runs[0] == runs[1]
    proc = subprocess.run(
        [sys.executable, '-m', 'chainer_hookext', 'peaks', '--dtype',
         'float64'], check=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, cwd=ROOT)
    assert 'RuntimeWarning' not in proc.stderr
    again = proc.stdout
    assert again.startswith('the CPU, float64: ')
    assert 'GFLOP/s' in again and str(tmp_path / 'peaks.json') in again
    assert len(saved(tmp_path / 'peaks.json')) == 2  # float32 and float64


def test_a_broken_file_is_measured_again_with_a_warning(
        tmp_path, monkeypatch):
    path = use_file(monkeypatch, tmp_path / 'peaks.json')
    path.write_text('{"peaks": ')
    with pytest.warns(RuntimeWarning, match='peaks.json.*cannot be read.*'
                      'measured again'):
        measured = peaks.measure(numpy, numpy.float16)
    [entry] = saved(path).values()
    assert entry['flops'] == measured.flops


def test_a_file_that_cannot_be_written_is_warned(tmp_path, monkeypatch):
    (tmp_path / 'a_file').write_text('')
    use_file(monkeypatch, tmp_path / 'a_file' / 'peaks.json')
    with pytest.warns(RuntimeWarning, match='cannot be kept.*'
                      'CHAINER_HOOKEXT_PEAKS'):
        measured = peaks.measure(numpy, numpy.float32)
    assert measured.flops > 0


def test_timed_links_takes_the_peaks_of_the_file(tmp_path, monkeypatch):
    use_planted_peaks(monkeypatch, tmp_path, 1e13, 1e12)
    trainer = make_trainer(tmp_path / 'result', stop=(2, 'iteration'))
    timed = TimedLinks(flops=True)
    trainer.extend(timed)
    trainer.run()
    assert timed.roofline_.peaks == peaks.Peaks(1e13, 1e12)

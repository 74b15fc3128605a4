import chainer
import numpy
import pytest
from chainer.backends import cuda

from chainer_hookext.memory import pool


def test_a_window_peaks_above_its_start():
    peaks = pool.LivePeaks()
    peaks.allocated(1000)  # before the window: not its own
    peaks.open()
    peaks.allocated(30)
    peaks.allocated(20)
    peaks.freed(50)
    peaks.allocated(10)
    assert peaks.close() == 50
    assert peaks.live == 1010


def test_a_window_without_allocations_peaks_at_zero():
    peaks = pool.LivePeaks()
    peaks.allocated(100)
    peaks.open()
    peaks.freed(100)
    assert peaks.close() == 0


def test_a_closed_inner_window_lifts_the_outer_peak():
    peaks = pool.LivePeaks()
    peaks.open()
    peaks.allocated(10)
    peaks.open()
    peaks.allocated(100)
    assert peaks.depth == 2
    peaks.freed(100)
    assert peaks.close() == 100
    peaks.allocated(5)  # 15 live: below the outer window's peak of 110
    assert peaks.close() == 110
    assert peaks.depth == 0


def test_a_lower_inner_peak_leaves_the_outer_peak():
    peaks = pool.LivePeaks()
    peaks.open()
    peaks.allocated(100)
    peaks.freed(100)
    peaks.open()
    peaks.allocated(40)
    assert peaks.close() == 40
    assert peaks.close() == 100


def test_close_all_closes_every_window():
    peaks = pool.LivePeaks()
    for _ in range(3):
        peaks.open()
        peaks.allocated(10)
    assert peaks.depth == 3
    peaks.close_all()
    assert peaks.depth == 0
    peaks.close_all()  # nothing open: nothing done
    assert peaks.live == 30


def test_allocations_outside_any_window_are_live_bytes_only():
    peaks = pool.LivePeaks()
    peaks.allocated(64)
    peaks.freed(16)
    assert (peaks.live, peaks.depth) == (48, 0)


def test_new_pool_hook_without_cupy(monkeypatch):
    monkeypatch.setattr(cuda, 'available', False)
    assert pool.new_pool_hook(pool.LivePeaks()) is None


@pytest.mark.gpu
def test_pool_hook_feeds_the_peaks():
    cupy = pytest.importorskip('cupy')
    if not chainer.backends.cuda.available:
        pytest.skip('no CUDA')
    peaks = pool.LivePeaks()
    hook = pool.new_pool_hook(peaks)
    with hook:
        peaks.open()
        a = cupy.zeros(1000, numpy.float32)  # 4000 bytes: a 4096-byte chunk
        b = cupy.zeros(3000, numpy.float32)  # 12000: a 12288-byte chunk
        del a, b
        peak = peaks.close()
    assert peak == 4096 + 12288
    assert peaks.live == 0

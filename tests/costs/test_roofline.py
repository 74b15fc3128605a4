import warnings

import pytest

from chainer_hookext.costs import peaks
from chainer_hookext.costs import roofline
from chainer_hookext.timing import records

# A machine of 100 FLOP/s and 10 bytes/s: the ridge at 10 FLOPs per byte.
PEAKS = peaks.Peaks(100.0, 10.0)


def test_memory_bound_below_the_ridge():
    point = roofline.Roofline(PEAKS, 'T').point('l1', 40, 8, 2.0)
    assert point.rate == 20.0
    assert point.intensity == 5.0
    assert point.bound == 'memory'
    # It can reach 5 FLOPs/byte * 10 bytes/s = 50 FLOP/s: 20 is 40%.
    assert point.percent == pytest.approx(40.0)


def test_compute_bound_above_the_ridge():
    point = roofline.Roofline(PEAKS, 'T').point('l1', 100, 4, 2.0)
    assert point.bound == 'compute'
    assert point.percent == pytest.approx(50.0)  # 50 of 100 FLOP/s


def test_work_of_bytes_only_is_memory_bound():
    point = roofline.Roofline(PEAKS, 'T').point('embed', 0, 10, 2.0)
    assert point.rate == 0.0
    assert point.bound == 'memory'
    assert point.percent == pytest.approx(50.0)  # 5 of 10 bytes/s


def test_nothing_timed_or_counted_has_no_point():
    line = roofline.Roofline(PEAKS, 'T')
    assert line.point('l1', 10, 10, 0.0) is None
    assert line.point('l1', 0, 0, 1.0) is None


def test_a_point_above_the_peak_raises_it_and_warns_once():
    line = roofline.Roofline(PEAKS, 'TimedLinks')
    with pytest.warns(RuntimeWarning, match="TimedLinks: 'l1' ran at 300"):
        point = line.point('l1', 300, 1, 1.0)
    assert line.peaks == peaks.Peaks(300.0, 10.0)
    assert point.percent == pytest.approx(100.0)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        point = line.point('l2', 10, 40, 1.0)  # 40 bytes/s: raised again
    assert line.peaks == peaks.Peaks(300.0, 40.0)
    assert point.percent == pytest.approx(100.0)


def test_link_points_forward_and_backward():
    entry = records.empty_entry('main')._replace(
        elapsed_time=1.0, flops=50, bytes=10, backward_time=2.0,
        backward_flops=100, backward_bytes=20)
    points = roofline.Roofline(PEAKS, 'T').link_points([entry])
    assert list(points) == ['main']
    assert points['main'].forward.rate == 50.0
    assert points['main'].backward.rate == 50.0
    assert points['main'].backward.bound == 'memory'  # 5 FLOPs a byte


# -- overhead-bound: far below both roofs (issue 45, item 3) ------------------
def test_far_below_the_compute_roof_is_overhead_bound():
    # 100 FLOPs over 4 bytes: above the ridge; 2.5 FLOP/s of its 100.
    point = roofline.Roofline(PEAKS, 'T').point('l1', 100, 4, 40.0)
    assert point.percent == pytest.approx(2.5)
    assert (point.bound, point.roof) == ('overhead', 'compute')
    assert point.label == 'overhead-bound (2.5% of the compute roof)'


def test_far_below_the_memory_roof_is_overhead_bound():
    # 1 FLOP a byte: below the ridge; 0.2 bytes/s of its 10.
    point = roofline.Roofline(PEAKS, 'T').point('l1', 10, 10, 50.0)
    assert (point.bound, point.roof) == ('overhead', 'memory')
    assert point.label == 'overhead-bound (2% of the memory roof)'


def test_from_the_threshold_up_the_roof_bounds_it():
    line = roofline.Roofline(PEAKS, 'T')
    seconds = 100 / (PEAKS.flops * roofline.OVERHEAD_PERCENT / 100)
    point = line.point('l1', 100, 4, seconds)
    assert point.percent == pytest.approx(roofline.OVERHEAD_PERCENT)
    assert (point.bound, point.label) == ('compute', 'compute-bound')
    point = line.point('l1', 40, 8, 2.0)  # 40% of its memory roof
    assert (point.bound, point.roof, point.label) == (
        'memory', 'memory', 'memory-bound')

import pytest

from chainer_hookext import plots
from tests.conftest import assert_png
from tests.conftest import bar_heights


def entry(epoch, allreduce=False):
    out = {'epoch': epoch, 'iteration': epoch * 10,
           'time/loop/iteration': 0.010, 'time/loop/data': 0.001,
           'time/loop/forward': 0.002, 'time/loop/backward': 0.003,
           'time/loop/optimizer': 0.001, 'time/loop/extensions': 0.002,
           'time/loop/extension/LogReport': 0.002, 'time/loop/gc': 0.0005,
           'time/loop/other': 0.001, 'time/loop/iteration/max': 0.1}
    if allreduce:
        out['time/loop/allreduce'] = 0.001
        out['time/loop/data/max'] = 0.005  # spread over workers
    return out


def test_phases():
    figure = plots.loop_time([entry(1), entry(2)])
    ax, = figure.axes
    heights = bar_heights(ax)
    assert list(heights) == ['data', 'forward', 'backward', 'optimizer',
                             'extensions', 'other']
    assert heights['backward'] == pytest.approx([3.0, 3.0])
    assert sum(h[0] for h in heights.values()) == pytest.approx(10.0)
    assert ax.get_xlabel() == 'epoch'
    assert_png(figure)


def test_chainermn():
    heights = bar_heights(plots.loop_time([entry(1, allreduce=True)]).axes[0])
    assert heights['allreduce'] == pytest.approx([1.0])
    assert heights['data'] == pytest.approx([1.0])


def test_no_data():
    assert plots.loop_time([{'epoch': 1, 'time/main': 1.0}]) is None
    assert plots.loop_time([]) is None

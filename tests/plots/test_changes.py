import pytest

from chainer_hookext import plots
from tests.conftest import assert_png


def test_each_change_a_bar():
    figure = plots.changes(['time/main', 'time/loop/data'], [-50.0, 10.0])
    ax, = figure.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        'time/main', 'time/loop/data']
    bars, = ax.containers
    assert [p.get_width() for p in bars.patches] == pytest.approx(
        [-50.0, 10.0])
    assert ax.yaxis_inverted()
    assert_png(figure)


def test_nothing_to_draw():
    assert plots.changes([], []) is None

import pytest

from chainer_hookext import plots
from tests.conftest import assert_png


def summary(n, backward=True, seconds=0.001):
    out = {}
    for i in range(n):
        row = {'time': seconds * (i + 1), 'occurrence': 3}
        if backward:
            row['backward_time'] = 2 * seconds * (i + 1)
        out['Function{}'.format(i)] = row
    return out


def test_largest_first():
    figure = plots.functions(summary(3))
    ax, = figure.axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ['Function2', 'Function1', 'Function0']
    forward, backward = ax.containers
    assert [p.get_width() for p in forward.patches] == pytest.approx(
        [3.0, 2.0, 1.0])  # ms
    assert [p.get_width() for p in backward.patches] == pytest.approx(
        [6.0, 4.0, 2.0])
    assert [p.get_x() for p in backward.patches] == pytest.approx(
        [3.0, 2.0, 1.0])
    assert ax.get_xlabel() == 'ms, whole run'
    assert ax.yaxis_inverted()
    assert_png(figure)


def test_top_15():
    figure = plots.functions(summary(20, seconds=0.1))
    ax, = figure.axes
    assert [len(c.patches) for c in ax.containers] == [15, 15]
    assert ax.get_yticklabels()[0].get_text() == 'Function19'
    assert ax.get_title().endswith('the 15 largest of 20')
    assert ax.get_xlabel() == 'seconds, whole run'


def test_forward_only():
    ax, = plots.functions(summary(2, backward=False)).axes
    assert len(ax.containers) == 1


def test_no_data():
    assert plots.functions({}) is None
    assert plots.functions({'ReLU': {'time': 0.0, 'backward_time': 0.0,
                                     'occurrence': 1}}) is None

import pytest

from chainer_hookext import plots
from chainer_hookext.plots import _memory
from tests.conftest import assert_png
from tests.conftest import bar_heights


NAMES = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
KIB = 1024


def entry(epoch, state=True):
    out = {'epoch': epoch, 'iteration': epoch * 10,
           'memory/(outside)/activations': KIB,
           'memory/main/activations': 10 * KIB}
    for name, own in zip(NAMES, (1, 2, 3, 4)):
        out['memory/' + name + '/activations/self'] = own * KIB
    if state:
        for name, size in (('main', 12), ('main/predictor', 12),
                           ('main/predictor/l1', 4),
                           ('main/predictor/l2', 8)):
            for field, times in (('params', 1), ('grads', 1),
                                 ('optimizer_state', 2)):
                out['memory/' + name + '/' + field] = size * times * KIB
    return out


def test_activations_and_state():
    figure = plots.memory([entry(1), entry(2)], NAMES + ['(outside)'])
    left, right = figure.axes[:2]
    heights = bar_heights(left)
    assert list(heights) == NAMES + ['(outside)']
    assert heights['main/predictor/l2'] == pytest.approx([4.0, 4.0])
    assert left.get_ylabel() == 'KiB in the measured iteration'
    # Each link's own state, child links apart: only the leaves hold any.
    heights = bar_heights(right)
    assert heights['main'] == pytest.approx([0, 0, 0])
    assert heights['main/predictor'] == pytest.approx([0, 0, 0])
    assert heights['main/predictor/l2'] == pytest.approx([8, 8, 16])
    assert right.get_title() == 'model state at epoch 2'
    assert_png(figure)


def test_own_bytes():
    e = entry(1)
    assert _memory.own_bytes(e, NAMES, 'main/predictor', 'params') == 0
    assert _memory.own_bytes(e, NAMES, 'main/predictor/l1', 'params') == (
        4 * KIB)
    # A figure the entry lacks counts 0.
    assert _memory.own_bytes({}, NAMES, 'main', 'params') == 0


def test_activations_only():
    figure = plots.memory([entry(1, state=False)], NAMES)
    assert len(figure.axes) == 1
    assert_png(figure)


def test_no_data():
    assert plots.memory([{'epoch': 1, 'time/main': 1.0}], NAMES) is None

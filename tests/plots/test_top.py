"""Pictures of large models: at most 20 named links, the rest as one
``N others`` entry, no warning of matplotlib's (issue 44, item 5)."""

import json

import pytest

from chainer_hookext import plots
from tests.conftest import assert_png
from tests.conftest import bar_heights


LINKS = 1000
NAMES = ['main'] + [f'main/l{i}' for i in range(LINKS - 1)]


def seconds(i):
    """Link ``i``'s self time: ``main/l998`` the largest."""
    return (i + 1) * 1e-6


def log():
    out = []
    for epoch in (1, 2):
        entry = {'epoch': epoch, 'iteration': 10 * epoch,
                 'time/(outside)/backward': 1e-6,
                 'memory/(outside)/activations': 1024}
        for i, name in enumerate(NAMES):
            entry[f'time/{name}/self'] = seconds(i)
            entry[f'time/{name}/backward/self'] = 2 * seconds(i)
            entry[f'memory/{name}/activations/self'] = 1024 * (i + 1)
            entry[f'memory/{name}/params'] = 4096
            entry[f'{name}/grad/norm'] = (i + 1) / epoch
            entry[f'{name}/out/std'] = 1.0
        out.append(entry)
    return out


def legend(figure):
    return [t.get_text() for t in figure.axes[-1].get_legend().get_texts()]


def test_link_time():
    figure = plots.link_time(log(), NAMES)
    forward, backward = figure.axes[:2]
    heights = bar_heights(forward)
    assert len(heights) == 20
    assert list(heights)[:-1] == NAMES[-19:]  # the largest, in order
    # the rest (main, l0 .. l979 and, backward, (outside)), summed
    rest = sum(seconds(i) for i in range(LINKS - 19)) * 1e3
    assert heights['982 others'] == pytest.approx([rest, rest])
    assert bar_heights(backward)['982 others'] == pytest.approx(
        [2 * rest + 1e-3] * 2)
    assert legend(figure) == ['982 others'] + NAMES[-19:][::-1]
    assert_png(figure)


def test_memory():
    figure = plots.memory(log(), NAMES + ['(outside)'])
    left, right = figure.axes[:2]
    assert len(bar_heights(left)) == len(bar_heights(right)) == 20
    assert len(legend(figure)) == 20
    assert legend(figure)[0] == '982 others'
    assert_png(figure)


def test_roofline():
    point = {'flops': 1, 'bytes': 1, 'seconds': 1.0, 'rate': 1e9,
             'intensity': 1.0, 'percent': 1.0, 'bound': 'memory'}
    figure = plots.roofline(json.loads(json.dumps({
        'peaks': {'flops': 1e11, 'bandwidth': 2e10},
        'roofline': {name: {'forward': dict(point, flops=i + 1),
                            'backward': dict(point, flops=i + 1)}
                     for i, name in enumerate(NAMES)}})))
    labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert len(labels) == 19
    assert labels[:2] == ['main/l990 (forward)', 'main/l990 (backward)']
    assert labels[-1] == '991 others'
    assert_png(figure)


@pytest.mark.parametrize('draw', [plots.gradients, plots.activations])
def test_statistics(draw):
    figure = draw(log(), NAMES)
    ax = figure.axes[0]
    assert len(ax.get_yticklabels()) == 19
    assert ax.get_title().endswith(': the 19 largest of 1000 links')
    assert_png(figure)


def test_timeline(tmp_path):
    # A span per link call, forward and backward: a collection of boxes
    # per category and depth, a label where one fits.
    from chainer_hookext.timing import trace
    events = [trace.complete('iteration 1', 'iteration', 0, 4 * 10 ** 6,
                             1, 1),
              trace.complete('forward', 'phase', 0, 2 * 10 ** 6, 1, 1),
              trace.complete('backward', 'phase', 2 * 10 ** 6, 4 * 10 ** 6,
                             1, 1)]
    for i, name in enumerate(NAMES):
        for way, start in (('forward', 0), ('backward', 2 * 10 ** 6)):
            events.append(trace.complete(
                name if way == 'forward' else name + ' (backward)',
                'link_' + way, start + 2000 * i, start + 2000 * (i + 1),
                1, 1, {'link': name}))
    path = str(tmp_path / 'iteration_1.json.gz')
    trace.write(path, events)
    figure = plots.timeline(path)
    ax, = figure.axes
    assert sum(len(c.get_paths()) for c in ax.collections) == 3 + 2 * LINKS
    assert len(ax.collections) == 4
    assert_png(figure)

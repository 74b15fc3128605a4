import os

import pytest

from chainer_hookext import plots
from chainer_hookext.plots import _timeline
from chainer_hookext.timing import trace
from tests.conftest import assert_png


def span(name, category, start, end, pid=1, tid=1):
    """A span from ``start`` to ``end`` microseconds."""
    return trace.complete(name, category, start * 1000, end * 1000, pid,
                          tid)


def events(pid=1):
    return trace.metadata(pid, 'rank 0', {pid: 'training loop'}) + [
        span('iteration 16', 'iteration', 0, 1000, pid, pid),
        span('data', 'phase', 0, 100, pid, pid),
        span('forward', 'phase', 100, 500, pid, pid),
        span('main', 'link_forward', 120, 480, pid, pid),
        span('main/predictor/l1', 'link_forward', 150, 300, pid, pid),
        span('LinearFunction', 'function_forward', 160, 290, pid, pid),
        span('something new', 'custom', 310, 320, pid, pid),
        span('backward', 'phase', 500, 1000, pid, pid),
        span('gc (generation 0)', 'gc', 600, 610, pid, pid),
        span('iteration 17', 'iteration', 1000, 2000, pid, pid),
        span('data', 'phase', 1000, 1100, pid, pid)]


def test_first_iteration():
    found = [(depth, e['name']) for depth, e in _timeline.first_iteration(
        events() + events(pid=2))]
    assert found == [
        (0, 'iteration 16'), (1, 'data'), (1, 'forward'), (2, 'main'),
        (3, 'main/predictor/l1'), (4, 'LinearFunction'),
        (3, 'something new'), (1, 'backward'), (2, 'gc (generation 0)')]


def test_timeline(tmp_path):
    path = str(tmp_path / 'iteration_16.json.gz')
    trace.write(path, events())
    figure = plots.timeline(path)
    ax, = figure.axes
    boxes = sum(len(c.get_paths()) for c in ax.collections)
    assert boxes == 9  # the spans of iteration 16
    assert ax.get_xlim() == pytest.approx((0, 1.0))  # ms
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ['iteration', 'phase', 'link_forward',
                      'function_forward', 'gc', 'custom']
    texts = [t.get_text() for t in ax.texts]
    assert 'iteration 16' in texts and 'forward' in texts
    assert_png(figure)


def test_no_iteration(tmp_path):
    path = str(tmp_path / 'iteration_1.json')
    trace.write(path, trace.metadata(1, 'rank 0', {}), compress=False)
    assert plots.timeline(path) is None


def test_first_trace(tmp_path):
    assert plots.first_trace(str(tmp_path)) is None
    folder = tmp_path / 'timeline'
    folder.mkdir()
    for name in ('outlier_iteration_3_rank0.json.gz', 'iteration_16.json.gz',
                 'iteration_9_rank1.json.gz', 'iteration_9_rank0.json.gz',
                 'iteration_100.json.gz', 'iteration_2.json.gz.1.tmp'):
        (folder / name).write_bytes(b'')
    assert plots.first_trace(str(tmp_path)) == os.path.join(
        str(folder), 'iteration_9_rank0.json.gz')


@pytest.mark.parametrize('reverse', [False, True])
def test_equal_spans_nest_by_path(reverse):
    # Pieces of cut spans: a parent and its child with the same start and
    # length, in either order in the file (issue 44, item 8).
    def link(name, start, end):
        return trace.complete(name, 'link_forward', start * 1000, end * 1000,
                              1, 1, {'link': name, 'piece': 1})
    spans = [link('main', 100, 300), link('main/predictor', 100, 300),
             link('main/predictor/conv2', 100, 300)]
    if reverse:
        spans.reverse()
    found = [(depth, e['name']) for depth, e in _timeline.first_iteration(
        [span('iteration 1', 'iteration', 0, 1000),
         span('forward', 'phase', 100, 300)] + spans)]
    assert found == [(0, 'iteration 1'), (1, 'forward'), (2, 'main'),
                     (3, 'main/predictor'), (4, 'main/predictor/conv2')]

import pytest

from chainer_hookext import plots
from tests.conftest import assert_png
from tests.conftest import bar_heights


NAMES = ['main', 'main/predictor', 'main/predictor/l1']


def entry(epoch, seconds, backward=True):
    """A LogReport entry with TimedLinks' keys: each link's self time is
    ``seconds`` forward, twice that backward."""
    out = {'epoch': epoch, 'iteration': 10 * epoch, 'main/loss': 1.0}
    for name in NAMES:
        out['time/' + name] = 3 * seconds
        out['time/' + name + '/self'] = seconds
        if backward:
            out['time/' + name + '/backward'] = 6 * seconds
            out['time/' + name + '/backward/self'] = 2 * seconds
    if backward:
        out['time/(outside)/backward'] = seconds / 2
    return out


def test_forward_and_backward():
    log = [entry(1, 0.001), entry(2, 0.002)]
    figure = plots.link_time(log, NAMES)
    forward, backward = figure.axes[:2]
    assert forward.get_title() == 'forward'
    assert backward.get_title() == 'backward'
    assert forward.get_xlabel() == 'epoch'
    assert [t.get_text() for t in forward.get_xticklabels()] == ['1', '2']
    heights = bar_heights(forward)
    assert list(heights) == NAMES
    assert heights['main/predictor/l1'] == pytest.approx([1.0, 2.0])  # ms
    heights = bar_heights(backward)
    assert list(heights) == NAMES + ['(outside)']
    assert heights['main'] == pytest.approx([2.0, 4.0])
    assert heights['(outside)'] == pytest.approx([0.5, 1.0])
    legend = [t.get_text() for t in figure.axes[1].get_legend().get_texts()]
    assert legend == ['(outside)'] + NAMES[::-1]  # the top layer first
    assert_png(figure)


def test_forward_only():
    figure = plots.link_time([entry(1, 0.001, backward=False)], NAMES)
    assert [ax.get_title() for ax in figure.axes] == ['forward']
    assert_png(figure)


@pytest.mark.parametrize('log', [
    [], [{'epoch': 1, 'main/loss': 1.0}],
    [{'epoch': 1, 'time/other/self': 1.0}]])
def test_no_data(log):
    assert plots.link_time(log, NAMES) is None


def test_chainermn_spread_and_resume():
    # Gathered over workers: the mean under the plain key, the spread
    # below it, left aside.  Resumed from a run without TimedLinks: the
    # entries before it are left out.
    log = [{'epoch': 1, 'iteration': 10, 'main/loss': 1.0}]
    for epoch in (2, 3):
        e = entry(epoch, 0.001)
        e.update({key + '/' + s: 1.0 for key in list(e)
                  if key.startswith('time/') for s in ('min', 'max')})
        log.append(e)
    figure = plots.link_time(log, NAMES)
    heights = bar_heights(figure.axes[0])
    assert heights['main'] == pytest.approx([1.0, 1.0])
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == [
        '2', '3']


def test_entries_per_iteration():
    # LogReport every 5 iterations: an epoch has several entries, the bars
    # are labelled by iteration.
    log = [dict(entry(1, 0.001), iteration=i) for i in (5, 10)]
    figure = plots.link_time(log, NAMES)
    ax = figure.axes[0]
    assert ax.get_xlabel() == 'iteration'
    assert [t.get_text() for t in ax.get_xticklabels()] == ['5', '10']


def test_many_links_and_entries():
    names = ['main/l{}'.format(i) for i in range(12)]
    log = [{'epoch': i, 'iteration': i,
            **{'time/' + n + '/self': 0.001 for n in names}}
           for i in range(1, 41)]
    figure = plots.link_time(log, names)
    ax = figure.axes[0]
    assert len(bar_heights(ax)) == 12
    assert len(ax.get_xticks()) <= 15
    assert_png(figure)

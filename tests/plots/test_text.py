"""A user's text is drawn as typed in every picture (issue 44, item 4)."""

import json

import matplotlib
import pytest
from matplotlib import cbook

from chainer_hookext import plots
from chainer_hookext.plots import _text
from chainer_hookext.timing import trace
from tests.conftest import assert_png


ODD = 'main/cost$x_$'
NAMES = ['main', ODD]


def drawn(text):
    """What matplotlib shows of a ``Text``'s string, or ``None`` when it
    reads it as mathematics."""
    value = text.get_text()
    if cbook.is_math_text(value):
        return None
    return value.replace(r'\$', '$').lstrip(_text.SHOWN)


def texts(figure):
    """Every string a figure shows, as shown (after drawing it)."""
    assert_png(figure)
    found = []
    for ax in figure.axes:
        legend = ax.get_legend()
        found += [ax.title, *ax.texts, *ax.get_yticklabels(),
                  *ax.get_xticklabels()]
        found += legend.get_texts() if legend else []
    # matplotlib's own mathematics (log axes' ticks) apart
    return [drawn(t) for t in found if 'mathdefault' not in t.get_text()]


def test_escape():
    assert _text.escape('main/l1') == 'main/l1'
    assert _text.escape('cost$x_$') == r'cost\$x_\$'
    assert _text.escape(r'a\$b') == r'a\\$b'
    assert _text.escape('_hidden') == _text.SHOWN + '_hidden'
    assert _text.escape(3) == '3'


def test_escape_for_tex():
    with matplotlib.rc_context({'text.usetex': True}):
        assert _text.escape(r'a_b^c$d\e{f}%#&~') == (
            r'a\_b\^{}c\$d\textbackslash{}e\{f\}\%\#\&\~{}')


def link_log():
    entry = {'epoch': 1, 'iteration': 1}
    for name in NAMES:
        entry[f'time/{name}/self'] = 0.001
        entry[f'time/{name}/backward/self'] = 0.002
        entry[f'memory/{name}/activations/self'] = 1024
        entry[f'memory/{name}/params'] = 1024
        entry[f'{name}/grad/norm'] = 0.5
        entry[f'{name}/out/std'] = 0.5
    return [entry]


def point():
    return {'flops': 100, 'bytes': 10, 'seconds': 1.0, 'rate': 1e9,
            'intensity': 10.0, 'percent': 10.0, 'bound': 'memory'}


def trace_file(tmp_path):
    path = str(tmp_path / 'iteration_1.json.gz')
    events = [trace.complete('iteration 1', 'iteration', 0, 10 ** 6, 1, 1),
              trace.complete(ODD, 'link_forward', 0, 10 ** 6, 1, 1,
                             {'link': ODD}),
              trace.complete('my$ext$', 'extension$', 0, 10 ** 5, 1, 1)]
    trace.write(path, events)
    return path


@pytest.mark.parametrize('draw', [
    lambda tmp_path: plots.link_time(link_log(), NAMES),
    lambda tmp_path: plots.memory(link_log(), NAMES),
    lambda tmp_path: plots.gradients(link_log(), NAMES),
    lambda tmp_path: plots.activations(link_log(), NAMES),
    lambda tmp_path: plots.roofline(json.loads(json.dumps({
        'peaks': {'flops': 1e11, 'bandwidth': 2e10},
        'roofline': {ODD: {'forward': point(), 'backward': None}}}))),
    lambda tmp_path: plots.functions({'My$Function$': {
        'time': 1.0, 'backward_time': 1.0}}),
    lambda tmp_path: plots.changes([f'time/{ODD}'], [10.0]),
    lambda tmp_path: plots.timeline(trace_file(tmp_path)),
], ids=['link_time', 'memory', 'gradients', 'activations', 'roofline',
        'functions', 'changes', 'timeline'])
def test_dollars_drawn_as_typed(tmp_path, draw):
    shown = texts(draw(tmp_path))
    assert None not in shown  # nothing read as mathematics
    assert any('cost$x_$' in t or 'My$Function$' in t for t in shown)


def test_leading_underscore_in_the_legend():
    names = ['_opt', '_opt/l1']
    log = [{'epoch': 1, 'time/_opt/self': 0.001, 'time/_opt/l1/self': 0.001}]
    figure = plots.link_time(log, names)
    assert texts(figure)
    legend = [drawn(t) for t in figure.axes[0].get_legend().get_texts()]
    assert legend == names[::-1]

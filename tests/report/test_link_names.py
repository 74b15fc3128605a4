"""One name per link on every surface: keys, page, findings, legends,
tables, traces, ``compare`` and JSON (issue 45, item 4)."""

import contextlib
import gzip
import io
import json
import os
import re

import pytest
from chainer.training import extensions

import chainer_hookext
from chainer_hookext import plots
from chainer_hookext.profile import command
from chainer_hookext.profile import findings
from chainer_hookext.profile import run as run_module
from chainer_hookext.report import keys
from chainer_hookext.report import link_names
from tests.conftest import make_trainer

pytest.importorskip('matplotlib')

#: The names of L.Classifier(MLP()) under the ``main`` optimizer.
NAMES = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
#: Where a name or path of a link is seen in a sentence or a line: a word
#: with a ``/`` in it (units such as ``FLOP/s`` aside) or one of the names.
_NAMED = re.compile(r"(?<![\w/.])(?:main|/)[\w/()]*")


def named(text):
    """The link names or paths a text shows."""
    return {word.rstrip('/') or '/' for word in _NAMED.findall(text)
            if not word.endswith('/s')}


def test_link_name_of_each_path():
    assert [link_names.link_name('main', path) for path in (
        '/', '/predictor', '/predictor/l1')] == NAMES[:3]


def train(out):
    trainer = make_trainer(out, stop=(8, 'iteration'))
    timed = chainer_hookext.TimedLinks(flops=True, functions=True,
                                       print_report=True)
    trainer.extend(timed, trigger=(4, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(4, 'iteration'))
    trainer.extend(chainer_hookext.Timeline(iterations=1),
                   trigger=(4, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(4, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(4, 'iteration'))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trainer.run()
    return timed, printed.getvalue()


def tree_names(lines):
    # The full name of each row of an indented tree: a row two spaces
    # below another is its child, shown without the parent's name.
    parents = []
    for line in lines:
        label = line.split()[0]
        depth = (len(line) - len(line.lstrip(' '))) // 2
        del parents[depth:]
        parents.append(label if not parents else parents[-1] + '/' + label)
        yield parents[-1]


def console_names(printed):
    found = set()
    rows = []
    for line in printed.splitlines():
        if line.startswith(('LinkName', 'Link / Function', 'TimedLinks ')):
            rows.append([line])
        elif rows and line.strip():
            rows[-1].append(line)
    for table in rows:
        header, body = table[0], table[1:]
        if header.startswith('LinkName'):
            found |= set(tree_names([
                line for line in body if not line.startswith('(')]))
        elif header.startswith('Link / Function'):
            found |= {line.split()[0] for line in body
                      if not line.startswith((' ', '('))}
    return found


def test_one_name_per_link_on_every_surface(tmp_path):
    timed, printed = train(tmp_path)
    allowed = set(NAMES) | {keys.OUTSIDE}
    run = run_module.from_folder(str(tmp_path))

    # Reported keys: each built from a name.
    built = {keys.figure_key('train', name, figure.field)
             for name in NAMES + [keys.OUTSIDE] for figure in keys.FIGURES}
    link_keys = {key for entry in run.log for key in entry
                 if key.startswith((keys.TIME + '/', keys.FLOPS + '/'))
                 and not key.startswith((keys.LOOP_PREFIX, '{}/{}/'.format(
                     keys.TIME, keys.FUNCTION), '{}/{}/'.format(
                     keys.FLOPS, keys.FUNCTION)))}
    assert link_keys and link_keys <= built

    # profile.json: the whole run's links, roofline and names.
    links = run.profile['links']
    assert links['names'] == NAMES
    assert set(NAMES) <= set(links['links']) <= allowed
    assert set(links['roofline']) <= allowed and set(links['roofline'])
    for found in links['unknown_functions'].values():
        assert set(found['links']) <= allowed

    # The trace's spans of links.
    [trace] = [p for p in run.traces if 'outlier' not in p]
    with gzip.open(trace, 'rt') as f:
        events = json.load(f)['traceEvents']
    spans = {e['name'] for e in events
             if e.get('cat') in ('link_forward', 'link_backward')}
    assert spans and {s.replace(' (backward)', '') for s in spans} <= allowed

    # The console tables: the tree (each row's full name) and the split
    # by function type.
    shown = console_names(printed)
    assert set(NAMES) <= shown <= allowed

    # The findings, and the page's tables.
    # Links are named when they take a share of the iteration worth a
    # finding: here ProfileReport's own time hides them, so an iteration
    # that takes their time only is added to the log.
    links_time = sum(row['self_time'] + row['backward_self_time']
                     for row in links['links'].values())
    busy = run._replace(log=run.log + [{
        keys.LOOP_PREFIX + keys.ITERATION:
        links_time / run.profile['config']['iteration']}])
    said = [f.text for f in findings.findings(run) + findings.findings(busy)]
    assert any(named(text) for text in said)  # overhead-bound links
    for text in said:
        assert named(text) <= allowed, text
    with open(os.path.join(str(tmp_path), 'profile.html'),
              encoding='utf-8') as f:
        page = f.read()
    cells = set(re.findall(r'<td>([^<]*)</td>', page))
    assert {c for c in cells if '/' in c and not c.endswith('/s')} <= allowed

    # The roofline's legend.
    figure = plots.roofline(links)
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert labels
    assert {label.rsplit(' (', 1)[0] for label in labels} <= allowed

    # compare: the keys it prints.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert command.main(['compare', str(tmp_path), str(tmp_path)]) == 0
    assert {w for w in printed.getvalue().split()
            if w.startswith((keys.TIME + '/main', keys.FLOPS + '/main'))
            } <= built

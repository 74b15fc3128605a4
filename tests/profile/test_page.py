"""profile.html: links named with `$`, large models, and the sections of
ActivationStatistics and GradientStatistics (issues 44 and 45)."""

import os
import re

import pytest
from chainer.training import extensions

import chainer_hookext
from chainer_hookext.profile import page
from chainer_hookext.profile import run as run_module
from tests.conftest import make_trainer

pytest.importorskip('matplotlib')


def sections(html):
    return re.findall(r'<h2 id="(\w+)">', html)


def make_run(tmp_path, names, epochs=2, statistics=True):
    """A run of ``names`` with every figure the page draws in its log."""
    log = []
    for epoch in range(1, epochs + 1):
        entry = {'epoch': epoch, 'iteration': 10 * epoch,
                 'time/loop/iteration': 0.01, 'time/loop/forward': 0.01}
        for i, name in enumerate(names):
            entry[f'time/{name}/self'] = (i + 1) * 1e-6
            entry[f'time/{name}/backward/self'] = (i + 1) * 2e-6
            entry[f'memory/{name}/activations/self'] = 1024 * (i + 1)
            entry[f'memory/{name}/params'] = 4096
            if statistics:
                entry[f'{name}/grad/norm'] = (i + 1) / epoch
                entry[f'{name}/grad/mean'] = 0.0
                entry[f'{name}/out/std'] = 1.0 + i
        log.append(entry)
    point = {'flops': 1, 'bytes': 1, 'seconds': 1.0, 'rate': 1e9,
             'intensity': 1.0, 'percent': 1.0, 'bound': 'memory'}
    profile = {'links': {
        'names': names, 'links': {},
        'functions': {'LinearFunction': {
            'time': 1.0, 'backward_time': 1.0, 'occurrence': 2}},
        'peaks': {'flops': 1e11, 'bandwidth': 2e10},
        'roofline': {n: {'forward': point, 'backward': None}
                     for n in names}}}
    if statistics:
        profile['gradients'] = {'names': names,
                                'statistics': ['mean', 'norm']}
        profile['activations'] = {'names': names, 'statistics': ['std']}
    out = tmp_path / 'result'
    out.mkdir()
    return run_module.Run(str(out), log, profile, [])


def written(run):
    path = page.write(run)
    with open(path, encoding='utf-8') as f:
        return f.read()


def test_a_link_named_with_dollars(tmp_path):
    # matplotlib would read `$x_$` as mathematics: every picture failed.
    html = written(make_run(tmp_path, ['main', 'main/cost$x_$']))
    assert sections(html) == ['links', 'functions', 'roofline', 'memory',
                              'activations', 'gradients', 'loop']
    assert 'main/cost$x_$' in html
    assert 'Nothing to draw' not in html
    assert html.count('class="note"') == 1  # "Written by": no failure


def test_a_thousand_links(tmp_path):
    # No warning of matplotlib's (warnings are errors), each picture
    # naming at most 20 links.
    names = ['main'] + [f'main/l{i}' for i in range(999)]
    html = written(make_run(tmp_path, names))
    assert len(re.findall(r'<img ', html)) == 7
    gradients = html[html.index('id="gradients"'):]
    assert gradients.count('<tr>') == 21  # the header, the 20 largest


def test_statistics_tables(tmp_path):
    html = written(make_run(tmp_path, ['main', 'main/l1', 'main/l2']))
    gradients = html[html.index('id="gradients"'):html.index('id="loop"')]
    # the largest norm first; every reported statistic a column
    assert gradients.index('main/l2') < gradients.index('main/l1') < (
        gradients.index('<td>main</td>'))
    assert '<th>mean</th><th>norm</th>' in gradients
    assert '<td>main/l2</td><td>0</td><td>1.5</td>' in gradients


def test_no_statistics_no_section(tmp_path):
    html = written(make_run(tmp_path, ['main'], statistics=False))
    assert 'activations' not in sections(html)
    assert 'gradients' not in sections(html)


def test_statistics_of_a_trainer(tmp_path):
    trainer = make_trainer(tmp_path, stop=(4, 'iteration'))
    trainer.extend(chainer_hookext.GradientStatistics(
        statistics=('norm', 'max')), trigger=(2, 'iteration'))
    trainer.extend(chainer_hookext.ActivationStatistics(),
                   trigger=(2, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(2, 'iteration'))
    trainer.run()
    run = run_module.from_folder(trainer.out)
    assert run.profile['gradients'] == {
        'names': ['main', 'main/predictor', 'main/predictor/l1',
                  'main/predictor/l2'],
        'statistics': ['norm', 'max']}
    assert run.profile['activations']['statistics'] == [
        'mean', 'std', 'min', 'max', 'zero_fraction']
    with open(os.path.join(trainer.out, 'profile.html'),
              encoding='utf-8') as f:
        html = f.read()
    assert sections(html) == ['summary', 'activations', 'gradients', 'loop']
    assert len(re.findall(r'<img ', html)) == 3


@pytest.mark.parametrize('memory', [False, True])
def test_memory_over_the_iteration_with_timeline_memory(tmp_path, memory):
    # Timeline(memory=True) traces: the section, its picture and the
    # holders at the peak; without memory counters, no section.
    trainer = make_trainer(str(tmp_path), stop=(4, 'iteration'))
    trainer.extend(chainer_hookext.Timeline(iterations=2, memory=memory),
                   trigger=(2, 'iteration'))
    trainer.extend(chainer_hookext.LinkMemory(), trigger=(4, 'iteration'))
    trainer.run()
    html = page.render(run_module.from_trainer(trainer, log=[]))
    assert ('memory_timeline' in sections(html)) == memory
    if memory:
        section = html[html.index('id="memory_timeline"'):]
        section = section[:section.index('<h2', 1)]
        assert 'alt="memory_timeline"' in section
        assert re.search(r'Peak [\d.]+\w*B at the (forward|backward|end) '
                         r'of <code>', section)
        assert section.count('<tr>') == 6  # a header, five holders
        assert 'lowers the peak' in section  # LinkMemory's F.forget

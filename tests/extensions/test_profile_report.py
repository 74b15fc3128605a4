"""ProfileReport: the page of a run, written at its trigger and at the end."""

import base64
import json
import os
import re

import chainer
import pytest
from chainer.training import extensions

import chainer_hookext
from chainer_hookext.profile import command
from tests.conftest import Boom
from tests.conftest import FakeComm
from tests.conftest import make_trainer
from tests.conftest import raise_boom

pytest.importorskip('matplotlib')

PNG = b'\x89PNG\r\n\x1a\n'


def sections(page):
    return re.findall(r'<h2 id="(\w+)">', page)


def images(page):
    return [base64.b64decode(data) for data in re.findall(
        r'src="data:image/png;base64,([^"]+)"', page)]


def read(out, name='profile.html'):
    with open(os.path.join(out, name), encoding='utf-8') as f:
        return f.read()


def test_every_section_of_what_ran(tmp_path):
    trainer = make_trainer(tmp_path, stop=(8, 'iteration'))
    trainer.extend(chainer_hookext.TimedLinks(flops=True, functions=True),
                   trigger=(4, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(4, 'iteration'))
    trainer.extend(chainer_hookext.LinkMemory(), trigger=(4, 'iteration'))
    trainer.extend(chainer_hookext.Timeline(iterations=1),
                   trigger=(4, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(4, 'iteration')))
    profile = chainer_hookext.ProfileReport()
    trainer.extend(profile, trigger=(4, 'iteration'))
    trainer.run()
    page = read(trainer.out)
    assert sections(page) == ['summary', 'links', 'functions', 'roofline',
                              'memory', 'loop', 'traces']
    pictures = images(page)
    assert len(pictures) == 6
    assert all(p.startswith(PNG) and len(p) > 1000 for p in pictures)
    assert not re.search(r'(src|href)="(https?:)?//', page)  # offline
    assert '<script' not in page
    assert 'LinearFunction' in page and 'timeline/iteration_' in page
    assert '(rest: its own Python)' in page  # each link's split
    assert profile.written == os.path.join(trainer.out, 'profile.html')
    assert not [n for n in os.listdir(trainer.out) if n.endswith('.tmp')]
    saved = json.loads(read(trainer.out, 'profile.json'))
    assert saved['config']['iteration'] == 8
    assert saved['links']['functions']['LinearFunction']['occurrence'] == 16
    # The command line rebuilds the same page from the files.
    os.remove(os.path.join(trainer.out, 'profile.html'))
    assert command.main(['report', trainer.out]) == 0
    assert sections(read(trainer.out)) == sections(page)


def test_only_what_ran(tmp_path):
    trainer = make_trainer(tmp_path, stop=(4, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(2, 'iteration'))
    trainer.run()
    page = read(trainer.out)
    assert sections(page) == ['summary', 'loop']
    assert '% of the training; ' in page  # a finding of the loop's


def test_written_when_training_fails(tmp_path):
    trainer = make_trainer(tmp_path, stop=(8, 'iteration'))
    trainer.extend(chainer_hookext.TimedLinks(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(100, 'epoch'))
    trainer.extend(raise_boom, trigger=(3, 'iteration'))
    with pytest.raises(Boom):
        trainer.run()
    # TimedLinks alone: nothing to do found, no summary.
    assert sections(read(trainer.out)) == ['links']


def test_no_log_report_warned(tmp_path):
    trainer = make_trainer(tmp_path, stop=(2, 'iteration'))
    trainer.extend(chainer_hookext.ProfileReport())
    with pytest.warns(RuntimeWarning, match='no LogReport.*LogReport()'):
        trainer.run()
    assert sections(read(trainer.out)) == []


def test_only_rank_0_writes(tmp_path):
    trainer = make_trainer(tmp_path, stop=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(comm=FakeComm(1, [None])),
                   trigger=(1, 'iteration'))
    trainer.run()
    assert not os.path.exists(os.path.join(trainer.out, 'profile.html'))


def test_bad_arguments():
    with pytest.raises(TypeError, match='file name'):
        chainer_hookext.ProfileReport(filename='')
    with pytest.raises(TypeError, match='communicator'):
        chainer_hookext.ProfileReport(comm='naive')


@pytest.mark.parametrize('filename, others, clash', [
    ('log', [], "the file of the extension 'LogReport'"),
    ('./profile.json', [], 'the figures ProfileReport writes beside its '
     'page'),
    ('timeline/page.html', [], "the folder of Timeline's traces"),
    ('mylog', [extensions.LogReport(filename='mylog')],
     "the file of the extension 'LogReport_1'"),
    ('loss.png', [extensions.PlotReport(['main/loss'], filename='loss.png')],
     "the file of the extension 'PlotReport'"),
    ('cg.dot', [extensions.DumpGraph('main/loss')],
     "the file of the extension 'dump_graph'"),
    ('model.npz', [extensions.snapshot(filename='model.npz')],
     "the file of the extension '_Snapshot'"),
])
def test_page_over_another_file_refused(
        tmp_path, monkeypatch, filename, others, clash):
    # Refused when training starts, before any iteration or file.  Chainer
    # calls `initialize` outside its try: DumpGraph's, run before, set
    # keep_graph_on_report and gets no finalize; put it back after the test.
    monkeypatch.setattr(chainer.config, 'keep_graph_on_report',
                        chainer.config.keep_graph_on_report)
    trainer = make_trainer(tmp_path, stop=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
    for other in others:
        trainer.extend(other)
    trainer.extend(chainer_hookext.ProfileReport(filename=filename))
    with pytest.raises(ValueError) as raised:
        trainer.run()
    assert str(raised.value).startswith(
        f'`ProfileReport(filename={filename!r})` would write its page over '
        f"{clash} in the trainer's out at every trigger; give a name no "
        'other file there has (')
    assert str(raised.value).endswith("such as 'profile.html'.")
    assert trainer.updater.iteration == 0
    assert not os.path.exists(tmp_path / 'log')


def test_page_named_as_the_log_without_log_report_refused(tmp_path):
    trainer = make_trainer(tmp_path, stop=(2, 'iteration'))
    trainer.extend(chainer_hookext.ProfileReport(filename='log'))
    with pytest.raises(ValueError, match='over the log `python -m '
                       'chainer_hookext report` reads'):
        trainer.run()


def test_page_beside_a_snapshot_of_changing_name(tmp_path):
    trainer = make_trainer(tmp_path, stop=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
    trainer.extend(extensions.snapshot(), trigger=(2, 'iteration'))
    trainer.extend(chainer_hookext.ProfileReport(filename='page.html'))
    trainer.run()
    assert os.path.isfile(tmp_path / 'page.html')
    assert os.path.isfile(tmp_path / 'snapshot_iter_2')

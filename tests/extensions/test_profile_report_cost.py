"""ProfileReport's lifecycle: its share of the training, one page per
iteration, Ctrl-C while it draws."""

import os
import re
import traceback

import pytest
from chainer import training
from chainer.training import extensions

import chainer_hookext
from chainer_hookext import plots
from chainer_hookext.profile import page
from tests.conftest import Boom
from tests.conftest import make_slow_trainer
from tests.conftest import make_trainer
from tests.conftest import raise_boom


def _drawn_on(monkeypatch, still, seconds=0.0):
    # Each page drawn takes ``seconds`` on the still clock; returns the
    # list of (iteration, still clock at the drawing's end) of each page.
    drawn = []

    def render(run):
        still.sleep(seconds)
        iteration = run.profile['config']['iteration']
        drawn.append((iteration, still.now))
        return f'<html>iteration {iteration}</html>'
    monkeypatch.setattr(page, 'render', render)
    return drawn


def _our_lines(text):
    return [line for line in text.splitlines() if 'ProfileReport' in line]


# -- its share of the training ------------------------------------------------

def test_drawing_takes_at_most_its_share(still, tmp_path, monkeypatch,
                                         capsys):
    draw = 2.0
    drawn = _drawn_on(monkeypatch, still, draw)
    trainer = make_slow_trainer(still, tmp_path, stop=60)
    trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
    profile = chainer_hookext.ProfileReport()
    profile.first_draw_seconds = draw
    trainer.extend(profile, trigger=(1, 'iteration'))
    trainer.run()
    at_triggers = drawn[:-1]
    # Drawn at some triggers, never past its share of the time so far.
    assert 1 < len(at_triggers) < 60
    share = chainer_hookext.ProfileReport.max_share
    for i, (iteration, end) in enumerate(at_triggers, 1):
        assert i * draw <= share * end
    # Always drawn at the end, with the last iteration.
    assert drawn[-1][0] == 60
    out = capsys.readouterr()
    lines = _our_lines(out.out + out.err)
    assert len(lines) == 1  # said once, not per skip
    assert '3%' in lines[0]


def test_a_page_dearer_than_the_training_is_drawn_at_the_end_only(
        still, tmp_path, monkeypatch, capsys):
    # Issue 45's small CNN: the whole training took less than a page.
    drawn = _drawn_on(monkeypatch, still, 1.5)
    trainer = make_trainer(tmp_path, stop=(8, 'iteration'))

    @training.make_extension(trigger=(1, 'iteration'))
    def iteration(trainer):
        still.sleep(0.125)
    trainer.extend(iteration)
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(2, 'iteration'))
    trainer.run()
    assert [iteration for iteration, _ in drawn] == [8]
    assert len(_our_lines(capsys.readouterr().err)) == 1


def test_the_clock_is_the_packages(still, tmp_path, monkeypatch):
    # On the still clock, with pages costing nothing, every trigger draws.
    drawn = _drawn_on(monkeypatch, still)
    trainer = make_slow_trainer(still, tmp_path, stop=6)
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    profile = chainer_hookext.ProfileReport()
    profile.first_draw_seconds = 0.0
    trainer.extend(profile, trigger=(2, 'iteration'))
    trainer.run()
    assert [iteration for iteration, _ in drawn] == [2, 4, 6]


# -- one page per iteration ---------------------------------------------------

def _free_trainer(still, tmp_path, monkeypatch, stop=4):
    drawn = _drawn_on(monkeypatch, still)
    trainer = make_trainer(tmp_path, stop=(stop, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    profile = chainer_hookext.ProfileReport()
    profile.first_draw_seconds = 0.0  # every trigger draws
    trainer.extend(profile, trigger=(2, 'iteration'))
    return trainer, drawn


def test_the_last_iteration_is_drawn_once(still, tmp_path, monkeypatch):
    trainer, drawn = _free_trainer(still, tmp_path, monkeypatch)
    trainer.run()
    assert [iteration for iteration, _ in drawn] == [2, 4]
    assert read(trainer.out) == '<html>iteration 4</html>'


def test_drawn_at_the_end_when_something_changed(still, tmp_path,
                                                 monkeypatch):
    trainer, drawn = _free_trainer(still, tmp_path, monkeypatch, stop=8)
    trainer.extend(raise_boom, trigger=(3, 'iteration'))
    with pytest.raises(Boom):
        trainer.run()
    assert [iteration for iteration, _ in drawn] == [2, 3]


# -- Ctrl-C while the page is drawn ------------------------------------------

def read(out, name='profile.html'):
    with open(os.path.join(out, name), encoding='utf-8') as f:
        return f.read()


def _interrupted_trainer(still, tmp_path, monkeypatch, at_call):
    # A real page, and Ctrl-C inside the ``at_call``-th loop picture.
    pytest.importorskip('matplotlib')
    calls = []
    loop_time = plots.loop_time

    def interrupted(*args):
        calls.append(args)
        if len(calls) == at_call:
            raise KeyboardInterrupt
        return loop_time(*args)
    monkeypatch.setattr(plots, 'loop_time', interrupted)
    trainer = make_trainer(tmp_path, stop=(6, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    profile = chainer_hookext.ProfileReport()
    profile.first_draw_seconds = 0.0
    trainer.extend(profile, trigger=(2, 'iteration'))
    return trainer, calls


def _config(page_text):
    return re.search(r'<tr><td>iteration</td><td>(\d+)</td>', page_text)


def test_ctrl_c_while_drawing_leaves_the_last_page(still, tmp_path,
                                                   monkeypatch, capsys):
    trainer, calls = _interrupted_trainer(still, tmp_path, monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt) as caught:
        trainer.run()
    # Not drawn again after the interrupt (finalize is quick).
    assert len(calls) == 2
    # The page of iteration 2, whole; nothing half-written beside it.
    text = read(trainer.out)
    assert _config(text).group(1) == '2' and text.endswith('</html>')
    assert not [n for n in os.listdir(trainer.out) if n.endswith('.tmp')]
    # Still the user's interrupt, without matplotlib's or the page's
    # frames.
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert not [f for f in frames
                if os.sep + 'plots' + os.sep in f.filename
                or f.filename.endswith(os.path.join('profile', 'page.py'))]
    out = capsys.readouterr()
    assert 'Traceback' not in out.out + out.err
    lines = _our_lines(out.out + out.err)
    assert len(lines) == 1
    assert 'left as it was' in lines[0] and 'iteration 2' in lines[0]


def test_ctrl_c_at_the_first_drawing_writes_no_page(still, tmp_path,
                                                    monkeypatch, capsys):
    trainer, calls = _interrupted_trainer(still, tmp_path, monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        trainer.run()
    assert len(calls) == 1
    assert not os.path.exists(os.path.join(trainer.out, 'profile.html'))
    assert not [n for n in os.listdir(trainer.out) if n.endswith('.tmp')]
    out = capsys.readouterr()
    lines = _our_lines(out.out + out.err)
    assert len(lines) == 1 and 'no profile.html' in lines[0]


def test_ctrl_c_elsewhere_still_draws_at_the_end(still, tmp_path,
                                                 monkeypatch):
    trainer, drawn = _free_trainer(still, tmp_path, monkeypatch, stop=8)

    @training.make_extension(trigger=(3, 'iteration'))
    def interrupt(trainer):
        raise KeyboardInterrupt
    trainer.extend(interrupt)
    with pytest.raises(KeyboardInterrupt):
        trainer.run()
    assert [iteration for iteration, _ in drawn] == [2, 3]


# -- a collection set off by the drawing --------------------------------------

class _CollectedSlowly:
    # Collected in a reference cycle: its __del__ runs inside gc.
    def __init__(self, still, seconds):
        self.still = still
        self.seconds = seconds
        self.cycle = self

    def __del__(self):
        self.still.sleep(self.seconds)


def test_a_collection_in_the_drawing_is_profile_reports_time(
        still, tmp_path, monkeypatch):
    import gc

    def render(run):
        _CollectedSlowly(still, 0.5)
        gc.collect()  # what matplotlib's figures set off
        return '<html></html>'
    monkeypatch.setattr(page, 'render', render)
    trainer = make_slow_trainer(still, tmp_path, stop=4)
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    profile = chainer_hookext.ProfileReport()
    profile.first_draw_seconds = 0.0
    trainer.extend(profile, trigger=(2, 'iteration'))
    trainer.run()
    # The page of iteration 2 is in the second report: after LogReport.
    second = trainer.get_extension('LogReport').log[1]
    assert second['time/loop/gc'] == 0.0
    assert second['time/loop/extension/ProfileReport'] == 0.5 / 2

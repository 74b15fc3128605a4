"""Every file the package writes: whole, and never through a planted link.

A symbolic link planted in a shared result folder, at a file's name or at
a name a writer could use beside it, points outside the folder: nothing
may be written there (issue 44, item 2).
"""

import importlib.util
import os
import pathlib
import stat

import pytest
from chainer.training import extensions

import chainer_hookext
from chainer_hookext import _files
from chainer_hookext.profile import command
from chainer_hookext.timing import trace
from tests.conftest import Boom
from tests.conftest import make_trainer
from tests.conftest import raise_boom

#: What a planted link points to, outside the result folder.
OUTSIDE = b'not yours'


def plant(folder, names, victim):
    """Plants in ``folder`` a link to ``victim`` at each of ``names`` and
    at the names beside each that a writer of this process could pick."""
    os.makedirs(folder, exist_ok=True)
    for name in names:
        for planted in (name, f'{name}.{os.getpid()}.tmp',
                        f'.{name}.{os.getpid()}.tmp', f'{name}.tmp'):
            os.symlink(victim, os.path.join(folder, planted))


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / 'outside' / 'victim'
    path.parent.mkdir()
    path.write_bytes(OUTSIDE)
    return path


def assert_untouched(victim):
    assert victim.read_bytes() == OUTSIDE
    assert os.listdir(victim.parent) == ['victim']


def test_write_atomic_replaces_a_link_never_its_target(tmp_path, victim):
    out = tmp_path / 'out'
    plant(out, ['a.json'], victim)
    _files.write_atomic(str(out / 'a.json'), b'{}')
    assert_untouched(victim)
    assert not (out / 'a.json').is_symlink()
    assert (out / 'a.json').read_bytes() == b'{}'


@pytest.mark.parametrize('umask', [0o022, 0o077, 0o002])
def test_mode_of_a_new_file_under_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        _files.write_atomic(str(tmp_path / 'a'), b'x')
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / 'a').st_mode) == 0o666 & ~umask


@pytest.mark.parametrize('where', ['write', 'replace'])
def test_failed_write_leaves_the_old_file_and_no_other(
        tmp_path, monkeypatch, where):
    path = tmp_path / 'a.json'
    path.write_bytes(b'old')

    class Failing:
        def __init__(self, fd, mode):
            self.f = open(fd, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[:1])
            raise Boom
    if where == 'replace':
        monkeypatch.setattr(os, 'replace', raise_boom)
    else:
        monkeypatch.setattr(_files, 'open', Failing, raising=False)
    with pytest.raises(Boom):
        _files.write_atomic(str(path), b'new content')
    assert path.read_bytes() == b'old'
    assert os.listdir(tmp_path) == ['a.json']


def test_trace_never_through_a_link(tmp_path, victim):
    folder = tmp_path / 'timeline'
    plant(folder, ['iteration_1.json.gz', 'iteration_2.json'], victim)
    os.remove(folder / 'iteration_1.json.gz')  # only the names beside
    assert trace.write(str(folder / 'iteration_1.json.gz'), [])
    assert trace.read(str(folder / 'iteration_1.json.gz')) == []
    # A link at the trace's own name: kept, as any file there is.
    assert not trace.write(str(folder / 'iteration_2.json'), [], False)
    assert_untouched(victim)


def test_profile_report_and_traces_never_through_a_link(tmp_path, victim):
    out = tmp_path / 'result'
    traces = [f'iteration_{n}.json.gz' for n in range(1, 9)]
    plant(out, ['profile.html', 'profile.json'], victim)
    plant(out / 'timeline', [f'{n}.{os.getpid()}.tmp' for n in traces],
          victim)
    plant(out / 'timeline', [f'outlier_{n}' for n in traces], victim)
    trainer = make_trainer(out, stop=(8, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(4, 'iteration'))
    timeline = chainer_hookext.Timeline(iterations=1)
    trainer.extend(timeline, trigger=(4, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(4, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(4, 'iteration'))
    trainer.run()
    assert_untouched(victim)
    assert timeline.written
    for name in ['profile.html', 'profile.json'] + [
            os.path.join('timeline', p) for p in timeline.written]:
        assert not (out / name).is_symlink()
        assert (out / name).stat().st_size > 0


def test_outlier_trace_never_through_a_link(still, tmp_path, victim):
    from tests.extensions import test_timeline_outliers as outliers
    out = tmp_path / 'result'
    plant(out / 'timeline', [f'outlier_iteration_{n}.json.gz.{os.getpid()}'
                             '.tmp' for n in range(1, 61)], victim)
    trainer = outliers.make_trainer(still, tmp_path, stop=60, data=[40])
    timeline = chainer_hookext.Timeline(outliers=True)
    trainer.extend(timeline, trigger=outliers.never)
    trainer.run()
    assert [os.path.basename(p) for p in timeline.written] == [
        'outlier_iteration_40.json.gz']
    assert_untouched(victim)


def test_command_line_never_through_a_link(tmp_path, victim):
    pytest.importorskip('matplotlib')
    out = tmp_path / 'result'
    trainer = make_trainer(out, stop=(4, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.run()
    plant(out, ['profile.html', 'page.html', 'changes.png'], victim)
    assert command.main(['report', str(out)]) == 0
    assert command.main(['report', str(out), '--out',
                         str(out / 'page.html')]) == 0
    assert command.main(['compare', str(out), str(out), '--out',
                         str(out / 'changes.png')]) == 0
    assert_untouched(victim)


@pytest.mark.filterwarnings(
    'ignore:TimedLinks.*the peaks are raised:RuntimeWarning')
def test_example_never_through_a_link(tmp_path, victim, monkeypatch):
    pytest.importorskip('matplotlib')
    script = (pathlib.Path(__file__).parents[1] / 'examples' /
              'train_digits.py')
    spec = importlib.util.spec_from_file_location('train_digits', script)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / 'result'
    plant(out, ['link_times.json', 'link_memory.json', 'link_time.png',
                'roofline.png', 'functions.png', 'loop_time.png',
                'memory.png', 'profile.html', 'profile.json'], victim)
    monkeypatch.setenv('MPLBACKEND', 'Agg')
    assert example.main(['--out', str(out), '--iterations', '3',
                         '--no-progress', '--unit', '8']) == 0
    assert_untouched(victim)
    for name in ['link_times.json', 'link_memory.json', 'roofline.png']:
        assert not (out / name).is_symlink()

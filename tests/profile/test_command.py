"""``python -m chainer_hookext``: report and compare, and their errors."""

import json
import os
import subprocess
import sys

import pytest

from chainer_hookext.profile import command
from chainer_hookext.profile import compare
from chainer_hookext.profile import run as run_module


def result_dir(path, log, profile=None):
    os.makedirs(str(path), exist_ok=True)
    (path / 'log').write_text(json.dumps(log))
    if profile is not None:
        (path / 'profile.json').write_text(json.dumps(profile))
    return str(path)


def runs(tmp_path):
    a = result_dir(tmp_path / 'a', [
        {'epoch': 1, 'time/main': 1.0, 'time/loop/data': 0.5},
        {'epoch': 2, 'time/main': 2.0, 'time/loop/data': 0.5,
         'memory/main/activations': 1024, 'time/main/max': 9.0,
         'time/main/min': 1.0, 'time/main/slowest_rank': 1}],
        {'config': {'model': 'Classifier', 'iteration': 10}})
    b = result_dir(tmp_path / 'b', [
        {'epoch': 1, 'time/main': 1.0, 'time/loop/data': 0.55,
         'memory/main/activations': 4096, 'flops/main': 10,
         'time/loop/slowest': 7}],
        {'config': {'model': 'Classifier', 'iteration': 5}})
    return a, b


def test_changes_by_family_largest_first(tmp_path):
    a, b = (run_module.from_folder(p) for p in runs(tmp_path))
    found = compare.changes(a, b)
    assert [c.key for c in found] == [
        'time/main', 'time/loop/data', 'flops/main',
        'memory/main/activations']
    assert found[0] == compare.Change('time/main', 2.0, 1.0)


def test_compare_prints(tmp_path, capsys):
    a, b = runs(tmp_path)
    assert command.main(['compare', a, b]) == 0
    out = capsys.readouterr().out
    assert 'model=Classifier' in out
    lines = out.splitlines()
    assert lines[2].split() == ['Key', 'A', 'B', 'Change', 'Spread']
    assert lines[3].split() == ['time/main', '2.00sec', '1.00sec', '-50.0%']
    assert lines[5].split() == ['flops/main', '-', '10', 'only', 'in', 'B']
    assert command.main(['compare', a, b, '--top', '1']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[3:]] == [
        'time/main', 'flops/main', 'memory/main/activations']


def test_compare_draws(tmp_path, capsys):
    pytest.importorskip('matplotlib')
    a, b = runs(tmp_path)
    path = str(tmp_path / 'changes.png')
    assert command.main(['compare', a, b, '--out', path]) == 0
    with open(path, 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_different_models_refused(tmp_path, capsys):
    a, _ = runs(tmp_path)
    c = result_dir(tmp_path / 'c', [{'time/main': 1.0}],
                   {'config': {'model': 'GAN'}})
    assert command.main(['compare', a, c]) == 2
    err = capsys.readouterr().err
    assert 'different models' in err and 'GAN' in err


@pytest.mark.parametrize('case, message', [
    ('missing', 'no such folder'),
    ('no log', 'no LogReport log'),
    ('not ours', 'no key of chainer_hookext'),
    ('bad json', 'not a LogReport log'),
])
def test_report_errors(tmp_path, capsys, case, message):
    path = tmp_path / 'run'
    if case != 'missing':
        path.mkdir()
    if case == 'not ours':
        (path / 'log').write_text(json.dumps([{'main/loss': 1.0}]))
    if case == 'bad json':
        (path / 'log').write_text('[{')
    assert command.main(['report', str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('python -m chainer_hookext report: ')
    assert message in err and 'Traceback' not in err


def test_help_and_module(tmp_path):
    done = subprocess.run(
        [sys.executable, '-m', 'chainer_hookext', 'compare', '--help'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True)
    assert done.returncode == 0
    assert 'RESULT_A' in done.stdout
    done = subprocess.run(
        [sys.executable, '-m', 'chainer_hookext', 'report',
         str(tmp_path / 'none')], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True)
    assert done.returncode == 2
    assert 'no such folder' in done.stderr


GOOD_LOG = [{'epoch': 1, 'time/main': 1.0}]


@pytest.mark.parametrize('log, profile, message', [
    (GOOD_LOG, '{"config": {"model": "Classif', 'profile.json: not '
     'ProfileReport\'s figures (Unterminated string'),
    (GOOD_LOG, '[]', 'profile.json: not ProfileReport\'s figures ([] is not '
     'an object); remove it'),
    (GOOD_LOG, '{"config": ["Classifier"]}', "(['Classifier'] at `config` "
     'is not an object)'),
    (GOOD_LOG, '{"links": {"links": {"/": {"self_time": "1ms"}}}}',
     "('1ms' at `links.links./.self_time` is not a number)"),
    (GOOD_LOG, '{"links": {"functions": {"ReLU": {"time": 1.0}}}}',
     "at `links.functions.ReLU` is not an object with `backward_time`)"),
    (GOOD_LOG, '{"memory": {"main": []}}', 'at `memory.main` is not an '
     'object'),
    (GOOD_LOG + [3], None, 'log: not a LogReport log (3 at `1` is not an '
     'object)'),
    ([{'time/main': '1ms'}], None, "log: not a LogReport log ('1ms' at "
     '`0.time/main` is not a number)'),
    ({'time/main': 1.0}, None, 'log: not a LogReport log ('),
    ([{'epoch': 1, 'time/main': 1.0}], b'\xff', 'profile.json: not '
     'ProfileReport\'s figures (\'utf-8\' codec can\'t decode'),
])
def test_broken_files_one_line(tmp_path, capsys, log, profile, message):
    path = tmp_path / 'run'
    path.mkdir()
    (path / 'log').write_text(json.dumps(log))
    if profile is not None:
        data = profile if isinstance(profile, bytes) else profile.encode()
        (path / 'profile.json').write_bytes(data)
    for argv in (['report', str(path)], ['compare', str(path), str(path)]):
        assert command.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f'python -m chainer_hookext {argv[0]}: ')
        assert message in err, err
        assert len(err.splitlines()) == 1


def test_unreadable_file_one_line(tmp_path, capsys, monkeypatch):
    a, b = runs(tmp_path)

    def refused(path, *args, **kwargs):
        raise PermissionError(13, 'Permission denied', path)
    monkeypatch.setattr(run_module, 'open', refused, raising=False)
    assert command.main(['compare', a, b]) == 2
    err = capsys.readouterr().err
    assert err == (f'python -m chainer_hookext compare: {a}/log: cannot be '
                   'read (Permission denied)\n')


def test_compare_missing_folder_one_line(tmp_path, capsys):
    a, _ = runs(tmp_path)
    missing = str(tmp_path / 'none')
    assert command.main(['compare', a, missing]) == 2
    assert capsys.readouterr().err == (
        f'python -m chainer_hookext compare: {missing}: no such folder; '
        'give the `out` folder of a trainer\n')


def test_module_broken_profile_no_traceback(tmp_path):
    path = tmp_path / 'run'
    path.mkdir()
    (path / 'log').write_text(json.dumps(GOOD_LOG))
    (path / 'profile.json').write_text('[')
    done = subprocess.run(
        [sys.executable, '-m', 'chainer_hookext', 'report', str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True)
    assert done.returncode == 2
    assert 'Traceback' not in done.stderr
    assert len(done.stderr.splitlines()) == 1

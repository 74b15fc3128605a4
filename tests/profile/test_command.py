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
         'memory/main/activations': 1024, 'time/main/max': 9.0}],
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
    assert lines[2].split() == ['Key', 'A', 'B', 'Change']
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

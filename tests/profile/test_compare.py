"""``compare``: per example across batch sizes, the runs' own spread, the
keys as reported, and ``--out`` by its suffix (issue 45, item 6)."""

import os

import pytest

from chainer_hookext.profile import command
from chainer_hookext.profile import compare
from chainer_hookext.profile import run as run_module
from tests.profile.test_command import result_dir

PNG = b'\x89PNG\r\n\x1a\n'


def batch_runs(tmp_path, batch_a=100, batch_b=200):
    # B's batches are twice as large: twice the time and FLOPs per
    # iteration, but for the data's time, the same per example.
    a = result_dir(tmp_path / 'a', [
        {'epoch': 1, 'time/main': 1.0, 'time/loop/data': 0.5,
         'flops/main': 100, 'memory/main/activations': 1024}],
        {'config': {'model': 'Classifier', 'batch_size': batch_a}})
    b = result_dir(tmp_path / 'b', [
        {'epoch': 1, 'time/main': 2.0, 'time/loop/data': 3.0,
         'flops/main': 200, 'memory/main/activations': 2048}],
        {'config': {'model': 'Classifier', 'batch_size': batch_b}})
    return a, b


def read_changes(a, b):
    return {c.key: c for c in compare.changes(
        run_module.from_folder(a), run_module.from_folder(b))}


def test_per_example_when_batch_sizes_differ(tmp_path, capsys):
    a, b = batch_runs(tmp_path)
    found = read_changes(a, b)
    assert found['time/main'].a_per_example == 0.01
    assert found['time/main'].b_per_example == 0.01
    assert found['flops/main'][3:5] == (1.0, 1.0)
    assert found['memory/main/activations'][3:5] == (None, None)
    assert command.main(['compare', a, b]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ['Key', 'A', 'B', 'Change', 'A/example',
                                'B/example', 'Change/example', 'Spread']
    # Ranked per example: the data's time grew threefold per example.
    assert lines[3].split() == ['time/loop/data', '500.00ms', '3.00sec',
                                '+500.0%', '5.00ms', '15.00ms', '+200.0%']
    assert lines[4].split() == ['time/main', '1.00sec', '2.00sec', '+100.0%',
                                '10.00ms', '10.00ms', '+0.0%']
    assert lines[6].split() == ['memory/main/activations', '1.00KiB',
                                '2.00KiB', '+100.0%']


@pytest.mark.parametrize('batch_b', [100, None])
def test_totals_only_when_batch_sizes_agree_or_unknown(tmp_path, capsys,
                                                       batch_b):
    a, b = batch_runs(tmp_path, batch_b=batch_b)
    assert read_changes(a, b)['time/main'][3:5] == (None, None)
    assert command.main(['compare', a, b]) == 0
    header = capsys.readouterr().out.splitlines()[2].split()
    assert header == ['Key', 'A', 'B', 'Change', 'Spread']


def test_changes_within_the_runs_own_spread_marked(tmp_path, capsys):
    # A's time/main varies by 10% of its latest value over its reports
    # (the first, a warm-up, left out): B's 5% more is within it, B's
    # data 50% more is not.
    a = result_dir(tmp_path / 'a', [
        {'time/main': 9.0, 'time/loop/data': 1.0},
        {'time/main': 1.0, 'time/loop/data': 1.0},
        {'time/main': 1.1, 'time/loop/data': 1.0},
        {'time/main': 1.0, 'time/loop/data': 1.0}])
    b = result_dir(tmp_path / 'b', [
        {'time/main': 1.05, 'time/loop/data': 1.5}])
    assert compare.spreads(run_module.from_folder(a)) == pytest.approx(
        {'time/main': 0.1, 'time/loop/data': 0.0})
    found = read_changes(a, b)
    assert found['time/main'].within_spread
    assert not found['time/loop/data'].within_spread
    assert command.main(['compare', a, b]) == 0
    rows = {line.split()[0]: line.split()
            for line in capsys.readouterr().out.splitlines()[3:]}
    assert rows['time/main'][-1] == 'within'
    assert rows['time/loop/data'][-1] == '+50.0%'


def test_keys_as_reported(tmp_path):
    # A link named ``max`` keeps its key; the spread over workers of a
    # gathered figure (all of min, max, slowest_rank) is left out.
    a = result_dir(tmp_path / 'a', [
        {'time/main': 1.0, 'time/main/max': 0.5, 'time/loop/slowest': 7,
         'time/loop/slowest/data': 0.25, 'time/loop/iteration/max': 2.0}])
    b = result_dir(tmp_path / 'b', [
        {'time/main': 1.0, 'time/main/min': 0.5, 'time/main/max': 1.5,
         'time/main/slowest_rank': 1, 'time/loop/slowest/data': 0.5}])
    found = read_changes(a, b)
    assert sorted(found) == ['time/loop/iteration/max',
                             'time/loop/slowest/data', 'time/main',
                             'time/main/max']
    assert found['time/main/max'][1:3] == (0.5, None)


def test_out_page(tmp_path, capsys):
    pytest.importorskip('matplotlib')
    a, b = batch_runs(tmp_path)
    path = tmp_path / 'changes.html'
    assert command.main(['compare', a, b, '--out', str(path)]) == 0
    page = path.read_text(encoding='utf-8')
    assert page.startswith('<!DOCTYPE html>')
    assert '<td>time/loop/data</td>' in page and 'B/example' in page
    assert 'src="data:image/png;base64,' in page
    assert f'Changes written to {path}' in capsys.readouterr().out


def test_out_picture(tmp_path):
    pytest.importorskip('matplotlib')
    a, b = batch_runs(tmp_path)
    path = tmp_path / 'changes.png'
    assert command.main(['compare', a, b, '--out', str(path)]) == 0
    assert path.read_bytes().startswith(PNG)


@pytest.mark.parametrize('name, said', [
    ('changes.pdf', 'a .pdf file'), ('changes', 'a file without a suffix')])
def test_out_of_another_kind_refused(tmp_path, capsys, name, said):
    a, b = batch_runs(tmp_path)
    path = str(tmp_path / name)
    assert command.main(['compare', a, b, '--out', path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''  # refused before anything is read
    assert captured.err == (
        f'python -m chainer_hookext compare: --out {path!r}: cannot write '
        f'{said}; give a file ending in .html (a page) or .png (a '
        'picture)\n')
    assert not os.path.exists(path)

"""examples/train_digits_mn.py under ``mpiexec -n 2``, then resumed."""

import os
import re

import pytest


EXAMPLE = os.path.join(
    os.path.dirname(__file__), '..', '..', 'examples', 'train_digits_mn.py')


def _tables(output):
    # {iteration: {link label: row cells}} of the printed tables.  Each
    # rank's stdout is a pseudo-terminal under Open MPI: the tables start
    # with the erase code, as PrintReport's rows do.
    output = re.sub(r'\x1b\[[0-9;]*[A-Za-z]', '', output)
    tables = {}
    for block in re.split(r'^TimedLinks at iteration ', output,
                          flags=re.M)[1:]:
        lines = block.splitlines()
        iteration = int(lines[0].split(':')[0])
        assert lines[0].endswith('seconds per training iteration over 2 '
                                 'workers')
        # Five rows in as many column blocks as fit 100 columns.
        header, rows, start = [], {}, 1
        while start < len(lines) and lines[start].startswith('LinkName'):
            header += lines[start].split()[1:]
            for line in lines[start + 1:start + 6]:
                rows.setdefault(line.split()[0], []).extend(line.split()[1:])
            start += 6
        assert header == ['Mean', 'Min', 'Max', 'SlowestRank', 'SelfMean',
                          'BackwardMean', 'BackwardSelfMean']
        tables[iteration] = rows
    return tables


@pytest.mark.slow
def test_example_names_the_slow_rank_and_resumes(mpiexec, tmp_path):
    args = [EXAMPLE, '--out', tmp_path / 'result', '--unit', 32,
            '--slow-rank', 1, '--delay', 0.01]
    output = mpiexec(*args, '--epoch', 2)
    tables = _tables(output)
    # 1437 training digits scattered: 719 per rank, 8 batches of 100 in
    # the first epoch (the iterator wraps around).
    assert sorted(tables) == [8, 15]
    for table in tables.values():
        assert list(table) == ['main', 'predictor', 'l1', 'l2', 'l3']
        assert table['l2'][3] == '1'
    assert 'time/main/slowest_rank' in output
    # Run again with the same --out: every rank resumes from its own
    # snapshot of epoch 2 and trains the third epoch only.
    output = mpiexec(*args, '--epoch', 3)
    assert sorted(_tables(output)) == [22]

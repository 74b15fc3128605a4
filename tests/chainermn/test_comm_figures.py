import io

import numpy
import pytest

from chainer_hookext import _comm_figures


def test_aggregate_mean_min_max_slowest_rank():
    summary = _comm_figures.aggregate([
        {'time/main': 1.0, 'time/main/l1': 0.5},
        {'time/main': 3.0, 'time/main/l1': 0.25},
        {'time/main': 2.0, 'time/main/l1': 0.75},
    ])
    assert summary == {
        'time/main': 2.0, 'time/main/max': 3.0, 'time/main/min': 1.0,
        'time/main/slowest_rank': 1,
        'time/main/l1': 0.5, 'time/main/l1/max': 0.75,
        'time/main/l1/min': 0.25, 'time/main/l1/slowest_rank': 2,
    }


def test_aggregate_tie_names_lowest_rank():
    summary = _comm_figures.aggregate([{'k': 1.0}, {'k': 2.0}, {'k': 2.0}])
    assert summary['k/slowest_rank'] == 1


def test_aggregate_key_missing_on_a_rank():
    summary = _comm_figures.aggregate([{'a': 1.0}, {'a': 3.0, 'b': 4.0}])
    assert list(summary)[:4] == ['a', 'a/max', 'a/min', 'a/slowest_rank']
    assert (summary['b'], summary['b/min'], summary['b/max'],
            summary['b/slowest_rank']) == (4.0, 4.0, 4.0, 1)


def test_aggregate_accepts_numpy_scalars_and_returns_floats():
    summary = _comm_figures.aggregate(
        [{'a': numpy.float32(1.0)}, {'a': numpy.float64(2.0)}])
    assert type(summary['a']) is float and summary['a'] == 1.5
    assert type(summary['a/max']) is float


@pytest.mark.parametrize('figures', [
    [{'time/main': 'fast'}],
    [{1: 1.0}],
    [None],
    [{'a': None}],
])
def test_aggregate_rejects_non_figures(figures):
    with pytest.raises(TypeError, match='aggregate'):
        _comm_figures.aggregate(figures)


def test_aggregate_rejects_link_named_like_a_summary_key():
    with pytest.raises(ValueError, match=r"time/main/max.*rename"):
        _comm_figures.aggregate([{'time/main': 1.0, 'time/main/max': 1.0}])


def _summary():
    return _comm_figures.aggregate([
        {'time/main': 2e-3, 'time/main/self': 1e-3,
         'time/main/l1': 1e-3, 'time/main/l1/self': 1e-3,
         'validation/time/main': 5e-3},
        {'time/main': 4e-3, 'time/main/self': 2e-3,
         'time/main/l1': 2e-3, 'time/main/l1/self': 2e-3,
         'validation/time/main': 1e-3},
    ])


def test_print_table_tree_with_self_column():
    out = io.StringIO()
    _comm_figures.print_table(_summary(), file=out)
    assert out.getvalue().splitlines() == [
        'Link    Mean     Min     Max  SlowestRank  SelfMean',
        'main  3.00ms  2.00ms  4.00ms            1    1.50ms',
        '  l1  1.50ms  1.00ms  2.00ms            1    1.50ms',
    ]


def test_print_table_prefix_units_and_no_self():
    out = io.StringIO()
    _comm_figures.print_table(
        _summary(), prefix='validation/time/', unit='auto_foreach', file=out)
    assert out.getvalue().splitlines() == [
        'Link    Mean     Min     Max  SlowestRank',
        'main  3.00ms  1.00ms  5.00ms            0',
    ]
    out = io.StringIO()
    _comm_figures.print_table(
        _summary(), prefix='validation/time/', unit='us', file=out)
    assert out.getvalue().splitlines()[1] == (
        'main  3000.00us  1000.00us  5000.00us            0')


def test_print_table_empty_summary_prints_header():
    out = io.StringIO()
    _comm_figures.print_table({}, file=out)
    assert out.getvalue() == 'Link  Mean  Min  Max  SlowestRank\n'


def test_print_table_rejects_unknown_unit():
    with pytest.raises(ValueError, match=r"print_table\(unit='minutes'\)"):
        _comm_figures.print_table(_summary(), unit='minutes')


@pytest.fixture(scope='module')
def gathered(mpirun_module):
    return mpirun_module('gather_figures.py')


@pytest.mark.parametrize('root', [0, 1])
def test_gather_over_mpi(gathered, root):
    results = [result[str(root)] for result in gathered]
    assert results[1 - root]['summary'] is None
    summary = results[root]['summary']
    assert summary == {
        'time/main': 1.5, 'time/main/max': 2.0, 'time/main/min': 1.0,
        'time/main/slowest_rank': 1,
        'time/main/l1': 9.5, 'time/main/l1/max': 10.0,
        'time/main/l1/min': 9.0, 'time/main/l1/slowest_rank': 0,
        'time/main/l1/self': 0.5, 'time/main/l1/self/max': 0.5,
        'time/main/l1/self/min': 0.5, 'time/main/l1/self/slowest_rank': 0,
        'time/main/only1': 2.0, 'time/main/only1/max': 2.0,
        'time/main/only1/min': 2.0, 'time/main/only1/slowest_rank': 1,
    }
    assert results[root]['table'].splitlines() == [
        'Link        Mean      Min       Max  SlowestRank  SelfMean',
        'main     1.50sec  1.00sec   2.00sec            1',
        '  l1     9.50sec  9.00sec  10.00sec            0   0.50sec',
        '  only1  2.00sec  2.00sec   2.00sec            1',
    ]

"""LinkMemory(comm=...) under ChainerMN (2 ranks, naive communicator)."""

import pytest


LINKS = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
FIGURES = ['/activations', '/activations/self', '/forgettable', '/params',
           '/grads', '/optimizer_state']
SPREAD = ['', '/max', '/min', '/slowest_rank']
# The memory peak, reported by default, gathered as the links' figures.
PEAK = ['memory/peak'] + ['memory/peak/' + category for category in (
    'params', 'grads', 'optimizer_state', 'activations')]


@pytest.mark.parametrize('local_report', [False, True])
def test_rank0_reports_the_spread_and_the_largest_rank(mpirun, local_report):
    rank0, rank1 = mpirun('link_memory_mn.py', local_report)
    assert rank0['iterations'] == rank1['iterations'] == [4, 8]
    for entry in rank0['log']:
        assert sorted(entry) == sorted(
            ['memory/' + link + figure + spread for link in LINKS
             for figure in FIGURES for spread in SPREAD] +
            ['memory/(outside)/activations' + spread for spread in SPREAD] +
            [key + spread for key in PEAK for spread in SPREAD])
        # Batches of 8 on rank 1, of 4 on rank 0: twice the activations of
        # each example, and the same scalars (the loss, the accuracy).
        key = 'memory/main/predictor/activations'
        assert entry[key + '/max'] == 2 * entry[key + '/min'] > 0
        assert entry[key + '/slowest_rank'] == 1
        assert entry[key] == 1.5 * entry[key + '/min']
        # The same model on both: the same parameters (a tie: rank 0).
        key = 'memory/main/params'
        assert entry[key + '/min'] == entry[key + '/max'] == entry[key] > 0
        assert entry[key + '/slowest_rank'] == 0
    assert rank0['printed'].count('LinkMemory at iteration') == 2
    if local_report:
        for entry in rank1['log']:
            assert entry['memory/main/activations'] == (
                rank0['log'][0]['memory/main/activations/max'])
    else:
        assert rank1['log'] == [{}, {}]
        assert rank1['printed'] == ''
    assert rank0['hooks_left'] == rank1['hooks_left'] == []

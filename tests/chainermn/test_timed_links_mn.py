"""TimedLinks(comm=...) under ChainerMN (2 ranks, naive communicator)."""

import pytest


# Seconds of the workers' fake clock per call of rank 1's l2; nothing else
# takes any time.  Exact in binary: the figures compare exactly.
DELAY = 2 ** -7
LINKS = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
SUFFIXES = ['', '/self']
# TimedLinks times backward too: training keys only (no backward in eval).
BACKWARD = ['time/' + link + suffix for link in LINKS
            for suffix in ('/backward', '/backward/self')] + [
    'time/(outside)/backward']
SPREAD = ['', '/max', '/min', '/slowest_rank']


@pytest.mark.parametrize('local_report', [False, True])
def test_rank0_reports_spread_and_names_the_slow_rank(mpirun, local_report):
    results = mpirun('timed_links_mn.py', local_report, DELAY)
    rank0, rank1 = results
    assert rank0['iterations'] == rank1['iterations'] == [4, 8]
    expected = sorted([
        prefix + 'time/' + link + suffix + spread
        for prefix in ('', 'validation/') for link in LINKS
        for suffix in SUFFIXES for spread in SPREAD] + [
        key + spread for key in BACKWARD for spread in SPREAD])
    for entry in rank0['log']:
        assert sorted(entry) == expected
        l2 = 'time/main/predictor/l2'
        # Rank 1's l2 takes DELAY per call, once per iteration and once per
        # evaluation call.
        for prefix in ('', 'validation/'):
            assert entry[prefix + l2 + '/slowest_rank'] == 1
            assert entry[prefix + l2 + '/max'] == DELAY
            assert entry[prefix + l2 + '/min'] == 0
            assert entry[prefix + l2] == DELAY / 2
        assert entry['time/main/slowest_rank'] == 1
    printed = rank0['printed'].splitlines()
    assert printed.count(
        'TimedLinks at iteration 4: seconds per training iteration over 2 '
        'workers') == 1
    header = printed.index(
        'TimedLinks at iteration 8: seconds per evaluation call of the '
        'model over 2 workers') + 1
    assert printed[header].split() == [
        'LinkName', 'Mean', 'Min', 'Max', 'SlowestRank', 'SelfMean']
    assert printed[header + 4].split()[0] == 'l2'
    assert printed[header + 4].split()[4] == '1'
    if local_report:
        for entry in rank1['log']:
            assert sorted(entry) == sorted([
                prefix + 'time/' + link + suffix for prefix in
                ('', 'validation/') for link in LINKS
                for suffix in SUFFIXES] + BACKWARD)
            assert entry['time/main/predictor/l2'] == DELAY
        assert 'seconds per training iteration, averaged over 4' in (
            rank1['printed'])
    else:
        assert rank1['log'] == [{}, {}]
        assert rank1['printed'] == ''
    assert rank0['hooks_left'] == rank1['hooks_left'] == []


def test_flops_are_gathered_like_time(mpirun):
    rank0, rank1 = mpirun('timed_links_mn.py', False, DELAY, True)
    for entry in rank0['log']:
        flops = {k: v for k, v in entry.items() if k.startswith('flops/')}
        assert sorted(flops) == sorted([
            'flops/' + link + suffix + spread for link in LINKS
            for suffix in ('', '/self', '/backward', '/backward/self')
            for spread in SPREAD] + [
            'flops/(outside)/backward' + spread for spread in SPREAD])
        # The same model on batches of the same size: the same FLOPs.
        l1 = 'flops/main/predictor/l1'
        assert flops[l1] > 0
        assert flops[l1 + '/min'] == flops[l1 + '/max'] == flops[l1]
        assert flops[l1 + '/slowest_rank'] == 0  # a tie: the lowest rank
        assert entry['validation/flops/main'] > 0
    assert rank1['log'] == [{}, {}]


def test_function_types_are_gathered_too(mpirun):
    rank0, rank1 = mpirun('timed_links_mn.py', False, DELAY, False, True)
    for entry in rank0['log']:
        types = {k: v for k, v in entry.items() if '/function/' in k}
        for key in ('time/function/LinearFunction',
                    'time/function/LinearFunction/backward',
                    'validation/time/function/LinearFunction'):
            for spread in SPREAD:
                assert key + spread in types
        assert 'validation/time/function/LinearFunction/backward' not in (
            types)
        # The fake clock gives the nodes no time on either rank.
        assert types['time/function/LinearFunction/max'] == 0.0
    assert rank1['log'] == [{}, {}]

"""Resume of TimedLinks(comm=...) from ChainerMN's multi_node_snapshot."""

import pytest

from tests.conftest import occurrences


# Seconds of the workers' fake clock per call of rank 1's l2; nothing else
# takes any time.  Exact in binary: the figures compare exactly.
DELAY = 2 ** -7
PATHS = ['/', '/predictor', '/predictor/l1', '/predictor/l2']


@pytest.mark.parametrize('mode', ['each', 'root'])
def test_resume_is_exact_in_call_counts(mpirun, mode):
    results = mpirun('resume.py', mode, DELAY)
    for rank, result in enumerate(results):
        whole, first, resumed = (
            result['whole'], result['first'], result['resumed'])
        assert whole['updates'] == list(range(1, 9))
        assert first['updates'] == [1, 2, 3, 4]
        assert resumed['updates'] == [5, 6, 7, 8], rank
        assert occurrences(first['summary']) == dict.fromkeys(PATHS, 4)
        assert occurrences(resumed['summary']) == dict.fromkeys(
            PATHS, 8), rank
        assert occurrences(whole['summary']) == dict.fromkeys(PATHS, 8)
    # Rank 0's log: the same keys at the same iterations.
    assert results[0]['resumed']['log'] == results[0]['whole']['log']
    assert [i for i, _ in results[0]['whole']['log']] == list(range(1, 9))
    assert any('time/main/predictor/l2/slowest_rank' in keys
               for _, keys in results[0]['whole']['log'])
    l2 = results[1]['resumed']['summary']['/predictor/l2']['elapsed_time']
    if mode == 'each':
        # Every rank saved and resumed its own state: rank 1's cumulative
        # time is that of its own 8 calls.
        assert results[0]['resumed']['files'] == [
            'snapshot_iter_4.0', 'snapshot_iter_4.1',
            'snapshot_iter_8.0', 'snapshot_iter_8.1']
        assert l2 == 8 * DELAY
    else:
        # Rank 0 saved; rank 1 resumed rank 0's state (the same call
        # counts, rank 0's times, all 0, for the first 4 iterations).
        assert results[0]['resumed']['files'] == [
            'snapshot_iter_4.0', 'snapshot_iter_8.0']
        assert l2 == 4 * DELAY

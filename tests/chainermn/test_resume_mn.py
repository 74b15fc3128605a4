"""Resume of TimedLinks(comm=...) from ChainerMN's multi_node_snapshot."""

import pytest


DELAY = 0.01
PATHS = ['/', '/predictor', '/predictor/l1', '/predictor/l2']


def _counts(summary):
    return {path: entry['occurrence'] for path, entry in summary.items()}


@pytest.mark.parametrize('mode', ['each', 'root'])
def test_resume_is_exact_in_call_counts(mpirun, mode):
    results = mpirun('resume.py', mode, DELAY)
    for rank, result in enumerate(results):
        whole, first, resumed = (
            result['whole'], result['first'], result['resumed'])
        assert whole['updates'] == list(range(1, 9))
        assert first['updates'] == [1, 2, 3, 4]
        assert resumed['updates'] == [5, 6, 7, 8], rank
        assert _counts(first['summary']) == dict.fromkeys(PATHS, 4)
        assert _counts(resumed['summary']) == dict.fromkeys(PATHS, 8), rank
        assert _counts(whole['summary']) == dict.fromkeys(PATHS, 8)
    # Rank 0's log: the same keys at the same iterations.
    assert results[0]['resumed']['log'] == results[0]['whole']['log']
    assert [i for i, _ in results[0]['whole']['log']] == list(range(1, 9))
    assert any('time/main/predictor/l2/slowest_rank' in keys
               for _, keys in results[0]['whole']['log'])
    l2 = results[1]['resumed']['summary']['/predictor/l2']['elapsed_time']
    if mode == 'each':
        # Every rank saved and resumed its own state: rank 1's cumulative
        # time covers its own 8 slow calls.
        assert results[0]['resumed']['files'] == [
            'snapshot_iter_4.0', 'snapshot_iter_4.1',
            'snapshot_iter_8.0', 'snapshot_iter_8.1']
        assert l2 >= 8 * DELAY
    else:
        # Rank 0 saved; rank 1 resumed rank 0's state (the same call
        # counts, rank 0's times for the first 4 iterations).
        assert results[0]['resumed']['files'] == [
            'snapshot_iter_4.0', 'snapshot_iter_8.0']
        assert 4 * DELAY <= l2 < 7 * DELAY

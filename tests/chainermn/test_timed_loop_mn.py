"""TimedLoop(comm=...) under ChainerMN (2 ranks, naive communicator)."""


# Seconds of the workers' fake clock: rank 1's l2 per call, and every
# rank's gradient all-reduce.  Exact in binary.
DELAY = 2 ** -7
ALLREDUCE = 2 ** -5
SPREAD = ['', '/max', '/min', '/slowest_rank']


def test_rank0_reports_phases_over_workers(mpirun):
    rank0, rank1 = mpirun('timed_loop_mn.py', DELAY, ALLREDUCE)
    assert len(rank0['log']) == 2 and rank1['log'] == [{}, {}]
    # The multi-node optimizer's first update broadcasts the parameters
    # instead of all-reducing gradients: 3 all-reduces in the first epoch.
    # The tail: the slowest single iteration of any worker, rank 1's slow
    # forward and a whole all-reduce; in the second report, the iteration
    # whose evaluation (at the first report, so counted in the next
    # interval) took rank 1 one more DELAY.
    for entry, allreduces, evaluation in zip(
            rank0['log'], (3, 4), (0, DELAY)):
        key = 'time/loop/'
        allreduce = ALLREDUCE * allreduces / 4
        assert {k[len(key):] for k in entry if k.count('/') == 2} == {
            'iteration', 'data', 'forward', 'backward', 'optimizer',
            'allreduce', 'extensions', 'other', 'gc', 'slowest'}
        assert entry[key + 'allreduce'] == allreduce
        assert entry[key + 'allreduce/min'] == allreduce
        assert entry[key + 'forward/max'] == DELAY
        assert entry[key + 'forward/min'] == 0
        assert entry[key + 'forward'] == DELAY / 2
        assert entry[key + 'forward/slowest_rank'] == 1
        # One evaluation call per epoch of 4 iterations on rank 1.
        assert entry[key + 'extension/validation/max'] == DELAY / 4
        assert entry[key + 'extension/validation/slowest_rank'] == 1
        assert entry[key + 'iteration/max'] == (
            DELAY + ALLREDUCE + evaluation)
        assert entry[key + 'slowest/rank'] == 1
        assert entry[key + 'slowest/forward'] == DELAY
        assert entry[key + 'slowest/allreduce'] == ALLREDUCE
        for spread in SPREAD:
            assert key + 'other' + spread in entry
    assert 'TimedLoop at iteration 4: seconds per training iteration, ' \
        'mean over 2 workers' in rank0['printed']
    for rank in (rank0, rank1):
        assert rank['left'] == [] and not rank['comm_wrapped']
        assert not rank['model_forward_left']

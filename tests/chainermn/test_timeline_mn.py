"""Timeline under ChainerMN (2 ranks, naive communicator)."""

import os

from chainer_hookext.timing import trace


DELAY = 2 ** -7  # rank 1's l2, per call, on the workers' fake clock


def test_one_file_holds_every_rank(mpirun, tmp_path):
    rank0, rank1 = mpirun('timeline_mn.py', DELAY, True)
    assert rank0['written'] == ['timeline/iteration_5.json.gz']
    assert rank1['written'] == []
    events = trace.read(str(tmp_path / 'out' / 'trainer' / rank0[
        'written'][0]))
    processes = {e['pid']: e['args']['name'] for e in events
                 if e['name'] == 'process_name'}
    assert processes == {1: 'rank 0', 2: 'rank 1'}
    for pid, seconds in ((1, 0.0), (2, DELAY)):
        l2 = [e['dur'] / 1e6 for e in events if e.get('cat') == 'link_forward'
              and e['pid'] == pid and e['name'] == 'main/predictor/l2']
        assert l2 == [seconds, seconds]  # one call per traced iteration


def test_without_comm_each_rank_writes_its_own(mpirun, tmp_path):
    rank0, rank1 = mpirun('timeline_mn.py', DELAY, False)
    assert rank0['written'] == ['timeline/iteration_5_rank0.json.gz']
    assert rank1['written'] == ['timeline/iteration_5_rank1.json.gz']
    folder = tmp_path / 'out' / 'trainer' / 'timeline'
    assert sorted(os.listdir(folder)) == [
        'iteration_5_rank0.json.gz', 'iteration_5_rank1.json.gz']
    for rank in (0, 1):
        events = trace.read(str(folder / 'iteration_5_rank{}.json.gz'.format(
            rank)))
        assert [e['args']['name'] for e in events
                if e['name'] == 'process_name'] == ['rank {}'.format(rank)]
        assert {e['pid'] for e in events} == {rank + 1}

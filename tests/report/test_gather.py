import io

from chainer_hookext.report import gather
from chainer_hookext.timing import records
from chainer_hookext.report import tables
from tests.conftest import FakeComm


def entry(key, parent, elapsed, self_time=0.0, backward=0.0):
    return records.Entry(key, parent, elapsed, self_time, 1, backward,
                         backward)


def test_spread_mean_min_max_slowest_rank():
    rows = gather.summarise([
        [('main', None, {'elapsed_time': 1.0})],
        [('main', None, {'elapsed_time': 3.0})],
        [('main', None, {'elapsed_time': 3.0})]])
    assert rows[0].spreads['elapsed_time'] == gather.Spread(
        7.0 / 3, 1.0, 3.0, 1)  # a tie names the lowest rank


def test_a_row_missing_on_a_rank_is_over_the_others():
    rows = gather.summarise([
        [('a', None, {'elapsed_time': 1.0})],
        [('a', None, {'elapsed_time': 3.0}),
         ('b', 'a', {'elapsed_time': 4.0})]])
    assert [r.key for r in rows] == ['a', 'b']
    assert rows[1].spreads['elapsed_time'] == (4.0, 4.0, 4.0, 1)


def test_gather_reports_each_field_with_its_spread():
    comm = FakeComm(0, [{'train': [
        ('main', None, {'elapsed_time': 3.0, 'self_time': 1.0,
                        'backward_time': 2.0, 'backward_self_time': 2.0}),
        ('(outside)', None, {'backward_time': 1.0})]}])
    mine = {'train': [entry('main', None, 1.0, 1.0, 4.0)]}
    gathered = gather.gather(comm, mine, backward=True)
    figures = {}
    for row in gathered['train']:
        figures.update(gather.figures('train', row))
    assert figures['time/main'] == 2.0
    assert figures['time/main/max'] == 3.0
    assert figures['time/main/slowest_rank'] == 1
    assert figures['time/main/backward/self/slowest_rank'] == 0
    assert figures['time/(outside)/backward/min'] == 1.0
    assert 'time/(outside)' not in figures
    out = io.StringIO()
    tables.print_spread_table(gathered['train'], 'sec', out, backward=True)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == [
        'LinkName', 'Mean', 'Min', 'Max', 'SlowestRank', 'SelfMean',
        'BackwardMean', 'BackwardSelfMean']
    assert lines[1].split() == [
        'main', '2.00sec', '1.00sec', '3.00sec', '1', '1.00sec', '3.00sec',
        '3.00sec']
    assert lines[2].split() == ['(outside)', '1.00sec']


def test_other_ranks_get_nothing():
    comm = FakeComm(1, [{'train': []}])
    assert gather.gather(comm, {'train': []}, False) is None

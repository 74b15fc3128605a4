import io
import pickle

from chainer_hookext.report import gather
from chainer_hookext.report import keys
from chainer_hookext.report import tables
from chainer_hookext.timing import records
from tests.conftest import FakeComm


def entry(key, parent, elapsed, self_time=0.0, backward=0.0):
    return records.Entry(
        key=key, parent=parent, elapsed_time=elapsed, self_time=self_time,
        occurrence=1, backward_time=backward, backward_self_time=backward)


def elapsed(row):
    return ['elapsed_time']


def test_spread_mean_min_max_slowest_rank():
    rows = gather.summarise([
        [entry('main', None, 1.0)],
        [entry('main', None, 3.0)],
        [entry('main', None, 3.0)]], elapsed)
    assert rows[0].spreads['elapsed_time'] == gather.Spread(
        mean=7.0 / 3, min=1.0, max=3.0, slowest_rank=1)  # a tie: lowest


def test_a_row_missing_on_a_rank_is_over_the_others():
    rows = gather.summarise([
        [entry('a', None, 1.0)],
        [entry('a', None, 3.0), entry('b', 'a', 4.0)]], elapsed)
    assert [r.key for r in rows] == ['a', 'b']
    assert rows[1].parent == 'a'
    assert rows[1].spreads['elapsed_time'] == gather.Spread(
        mean=4.0, min=4.0, max=4.0, slowest_rank=1)


def test_spreads_of_named_values():
    spreads = gather.spreads([{'data': 2.0}, {'data': 4.0, 'other': 1.0}])
    assert list(spreads) == ['data', 'other']
    assert spreads['data'] == gather.Spread(3.0, 2.0, 4.0, 1)
    assert spreads['other'] == gather.Spread(1.0, 1.0, 1.0, 1)


def test_gather_reports_each_figure_with_its_spread():
    theirs = keys.Report('train', 4, [
        entry('main', None, 3.0, 1.0, 2.0),
        records.empty_entry(keys.OUTSIDE)._replace(
            backward_time=1.0, backward_self_time=1.0)])
    comm = FakeComm(0, [[theirs]])
    mine = keys.Report('train', 4, [entry('main', None, 1.0, 1.0, 4.0)])
    gathered = gather.gather(comm, [mine], backward=True)
    assert [(g.mode, g.workers) for g in gathered] == [('train', 2)]
    figures = gather.figures(gathered[0])
    assert figures['time/main'] == 2.0
    assert figures['time/main/max'] == 3.0
    assert figures['time/main/slowest_rank'] == 1
    assert figures['time/main/backward/self/slowest_rank'] == 0
    assert figures['time/(outside)/backward/min'] == 1.0
    assert 'time/(outside)' not in figures
    assert 'time/(outside)/backward/self' not in figures
    out = io.StringIO()
    tables.print_spread_table(gathered[0].entries, 'sec', out, backward=True)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == [
        'LinkName', 'Mean', 'Min', 'Max', 'SlowestRank', 'SelfMean',
        'BackwardMean', 'BackwardSelfMean']
    assert lines[1].split() == [
        'main', '2.00sec', '1.00sec', '3.00sec', '1', '1.00sec', '3.00sec',
        '3.00sec']
    assert lines[2].split() == ['(outside)', '1.00sec']


def test_evaluation_has_no_backward_figures():
    report = keys.Report('eval', 2, [entry('main', None, 1.0, 0.5, 9.0)])
    gathered = gather.gather(FakeComm(0, [[report]]), [report], True)
    assert sorted(gather.figures(gathered[0])) == sorted(
        key + suffix
        for key in ('validation/time/main', 'validation/time/main/self')
        for suffix in ('', '/min', '/max', '/slowest_rank'))


def test_a_mode_is_gathered_from_the_ranks_that_report_it():
    train = keys.Report('train', 2, [entry('main', None, 1.0)])
    evaluation = keys.Report('eval', 1, [entry('main', None, 5.0)])
    comm = FakeComm(0, [[train, evaluation]])
    gathered = gather.gather(comm, [train], False)
    assert [g.mode for g in gathered] == ['train']


def test_what_is_sent_pickles():
    report = keys.Report('train', 2, [entry('main', None, 1.0)])
    comm = FakeComm(1, [[]])
    assert gather.gather(comm, [report], False) is None
    assert pickle.loads(pickle.dumps(comm.gathered[0])) == [report]


def test_other_ranks_get_nothing():
    comm = FakeComm(1, [[]])
    assert gather.gather(comm, [], False) is None

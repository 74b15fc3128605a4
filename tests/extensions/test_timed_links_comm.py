"""TimedLinks(comm=...) in one process, with a stand-in communicator.

The real thing runs under mpiexec in tests/chainermn/test_timed_links_mn.py;
these tests check the arguments and what each rank reports, without MPI.
"""

import pytest
from chainer.training import extensions

import chainer_hookext
from chainer_hookext.report import keys
from chainer_hookext.timing import records
from tests.conftest import FakeComm


def test_comm_must_be_a_communicator():
    with pytest.raises(TypeError, match=r"TimedLinks\(comm='naive'\).*"
                       r"chainermn.create_communicator"):
        chainer_hookext.TimedLinks(comm='naive')


def test_local_report_needs_comm():
    with pytest.raises(ValueError, match=r'local_report=True.*comm='):
        chainer_hookext.TimedLinks(local_report=True)
    with pytest.raises(TypeError, match=r"local_report='yes'"):
        chainer_hookext.TimedLinks(comm=FakeComm(0, []), local_report='yes')


def _run(trainer_factory, comm, local_report=False, print_report=False):
    trainer = trainer_factory(stop=(2, 'iteration'))
    trainer.extend(chainer_hookext.TimedLinks(
        comm=comm, local_report=local_report, print_report=print_report),
        trigger=(1, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
    trainer.run()
    return [{k: v for k, v in e.items() if 'time/' in k}
            for e in trainer.get_extension('LogReport').log]


def test_rank0_reports_the_summary(trainer_factory, capsys):
    slow = [keys.Report('train', 1, [records.empty_entry(
        'main/predictor/l2', 'main/predictor')._replace(elapsed_time=1.0)])]
    comm = FakeComm(0, [slow])
    log = _run(trainer_factory, comm, print_report=True)
    assert len(comm.gathered) == 2
    [sent] = comm.gathered[0]
    assert sent.mode == 'train' and sent.per == 1
    assert [e.key for e in sent.entries][:2] == ['main', 'main/predictor']
    for entry in log:
        assert entry['time/main/predictor/l2/max'] == 1.0
        assert entry['time/main/predictor/l2/slowest_rank'] == 1
        # Keys only rank 0 has: their figures are rank 0's alone.
        assert entry['time/main/predictor/l1/slowest_rank'] == 0
        assert (entry['time/main/predictor/l1/min']
                == entry['time/main/predictor/l1/max'])
    out = capsys.readouterr().out
    assert out.count('seconds per training iteration over 2 workers') == 2
    assert 'SlowestRank' in out


@pytest.mark.parametrize('local_report', [False, True])
def test_other_ranks_report_locally_only_if_asked(
        trainer_factory, capsys, local_report):
    comm = FakeComm(1, [[]])
    log = _run(trainer_factory, comm, local_report, print_report=True)
    assert len(comm.gathered) == 2
    out = capsys.readouterr().out
    if local_report:
        for entry, [sent] in zip(log, comm.gathered):
            assert sorted(entry) == sorted(keys.figures(sent, True))
        assert 'averaged over 1 iterations' in out
    else:
        assert log == [{}, {}]
        assert out == ''

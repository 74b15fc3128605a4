"""TimedLoop's tail of the iterations and the garbage collector's time, on
a real Trainer with known delays on a still clock."""

import gc

import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLoop
from chainer_hookext.extensions.timed_loop import LoopFigures
from chainer_hookext.report import keys
from tests.conftest import BACKWARD
from tests.conftest import Boom
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import FakeComm
from tests.conftest import OPTIMIZER
from tests.conftest import SLOW
from tests.conftest import make_slow_trainer
from tests.conftest import loop_log
from tests.conftest import run_timed
from tests.conftest import snapshot_of

#: An iteration without stall, and with the every-other-iteration ``slow``.
PLAIN = DATA + FORWARD + BACKWARD + OPTIMIZER
#: Stalls injected at two known iterations.
STALLS = {3: 64.0, 7: 32.0}


def _stalling(still, stalls=STALLS):
    # Before TimedLoop (PRIORITY_WRITER): in the same iteration.
    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_WRITER + 1)
    def stall(trainer):
        still.sleep(stalls.get(trainer.updater.iteration, 0.0))
    return stall


def _seconds(iteration):
    return PLAIN + (SLOW if iteration % 2 == 0 else 0.0) + STALLS.get(
        iteration, 0.0)


def test_tail_names_the_slowest(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=12)
    trainer.extend(_stalling(still), name='stall')
    _, log = run_timed(trainer, 12)
    figures, = log
    # Iterations 1 to 11 completed before the report: 12 runs.
    seconds = sorted(_seconds(i) for i in range(1, 12))
    assert seconds == [15.0] * 4 + [31.0] * 5 + [47.0, 79.0]
    assert figures['iteration/max'] == 79.0
    assert figures['iteration/p50'] == 31.0  # the 6th of 11
    assert figures['iteration/p90'] == 47.0  # the 10th of 11
    assert figures['slowest'] == 3
    assert figures['slowest/data'] == DATA
    assert figures['slowest/forward'] == FORWARD
    assert figures['slowest/backward'] == BACKWARD
    assert figures['slowest/optimizer'] == OPTIMIZER
    assert figures['slowest/extension/stall'] == 64.0
    assert figures['slowest/extension/slow'] == 0.0  # an odd iteration
    assert figures['slowest/extensions'] == 64.0
    assert figures['slowest/other'] == 0.0
    assert figures['slowest/gc'] == 0.0
    assert 'slowest/iteration' not in figures
    assert 'slowest/rank' not in figures


def test_tail_per_interval(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=12)
    trainer.extend(_stalling(still), name='stall')
    _, log = run_timed(trainer, 6)
    first, second = log
    # The report at 6: iterations 1 to 5; at 12: 6 to 11.
    assert (first['slowest'], first['iteration/max']) == (3, 79.0)
    assert (first['iteration/p50'], first['iteration/p90']) == (31.0, 79.0)
    assert (second['slowest'], second['iteration/max']) == (7, 47.0)
    assert second['iteration/p50'] == 31.0
    assert second['slowest/extension/stall'] == 32.0


def test_first_of_equal_iterations_is_the_slowest(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=8)
    trainer.extend(_stalling(still, {3: 32.0, 5: 32.0}), name='stall')
    _, log = run_timed(trainer, 8)
    assert log[0]['slowest'] == 3
    assert log[0]['iteration/max'] == PLAIN + 32.0


def test_no_tail_before_an_iteration_completed(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=2)
    _, log = run_timed(trainer, 1)
    assert 'slowest' not in log[0]  # iteration 1 runs at the report
    assert log[1]['slowest'] == 1


def test_sample_is_bounded(still, tmp_path, monkeypatch):
    monkeypatch.setattr(TimedLoop, 'tail_size', 3)
    trainer = make_slow_trainer(still, tmp_path, stop=12)
    trainer.extend(_stalling(still), name='stall')
    timed = TimedLoop()
    seen = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        seen.append(len(timed._times.seconds))
    trainer.extend(look)
    trainer.extend(timed, trigger=(12, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(12, 'iteration')))
    trainer.run()
    figures, = loop_log(trainer)
    assert max(seen) == 3
    # The slowest is kept apart, exact; the percentiles are of the sample.
    assert (figures['slowest'], figures['iteration/max']) == (3, 79.0)
    assert figures['iteration/p90'] in {_seconds(i) for i in range(1, 12)}


def test_tail_resumes_exactly(still, tmp_path):
    whole = make_slow_trainer(still, tmp_path / 'whole', stop=12)
    whole.extend(_stalling(still), name='stall')
    _, log_whole = run_timed(whole, 6)
    first = make_slow_trainer(still, tmp_path / 'first', stop=8)
    first.extend(_stalling(still), name='stall')
    run_timed(first, 6)
    second = make_slow_trainer(still, tmp_path / 'second', stop=12)
    second.extend(_stalling(still), name='stall')
    _, log = run_timed(second, 6, snapshot=snapshot_of(first))
    # Iterations 6 and 7 before the snapshot, 8 to 11 after it.
    assert log == log_whole
    assert log_whole[1]['slowest'] == 7


def test_snapshot_without_the_tail_loads(still, tmp_path, recwarn):
    first = make_slow_trainer(still, tmp_path / 'first', stop=8)
    first.extend(_stalling(still), name='stall')
    run_timed(first, 6)
    target = snapshot_of(first)
    old = {k: v for k, v in target.items() if '/tail/' not in k}
    assert len(old) < len(target)  # an earlier version's snapshot
    second = make_slow_trainer(still, tmp_path / 'second', stop=12)
    second.extend(_stalling(still), name='stall')
    _, log = run_timed(second, 6, snapshot=old)
    figures = log[1]
    assert figures['slowest'] == 10  # 7 went with the tail
    assert figures['iteration'] == 23.0 + 32.0 / 6
    assert not [w for w in recwarn if 'TimedLoop' in str(w.message)]


def test_gathered_tail_names_the_slowest_rank(still, tmp_path, capsys):
    other_tail = {'iteration/max': 100.0, 'iteration/p50': 41.0,
                  'iteration/p90': 53.0, 'slowest': 4, 'slowest/data': 99.0}
    comm = FakeComm(0, [LoopFigures({'iteration': 20.0}, other_tail)])
    trainer = make_slow_trainer(still, tmp_path, stop=12)
    trainer.extend(_stalling(still), name='stall')
    _, log = run_timed(trainer, 12, comm=comm, print_report=True, unit='sec')
    figures, = log
    assert len(comm.gathered) == 1  # one gather per report
    assert figures['iteration/max'] == 100.0  # rank 1's slowest
    assert figures['slowest/rank'] == 1
    assert figures['slowest'] == 4
    assert figures['slowest/data'] == 99.0
    assert 'slowest/extension/stall' not in figures  # rank 0's only
    assert figures['iteration/p50'] == (31.0 + 41.0) / 2
    assert figures['iteration/p90'] == (47.0 + 53.0) / 2
    assert figures['iteration/slowest_rank'] == 0  # of the mean iteration
    out = capsys.readouterr().out
    assert 'slowest iteration 4 (rank 1): 100.00sec; p50 36.00sec, ' \
        'p90 50.00sec' in out


def test_gathered_tail_of_this_rank(still, tmp_path):
    comm = FakeComm(0, [LoopFigures({}, {})])
    trainer = make_slow_trainer(still, tmp_path, stop=12)
    trainer.extend(_stalling(still), name='stall')
    _, (figures,) = run_timed(trainer, 12, comm=comm)
    assert (figures['slowest'], figures['slowest/rank']) == (3, 0)
    assert figures['iteration/max'] == 79.0
    assert figures['slowest/extension/stall'] == 64.0


def test_print_report_tail(still, tmp_path, capsys):
    trainer = make_slow_trainer(still, tmp_path, stop=12)
    trainer.extend(_stalling(still), name='stall')
    run_timed(trainer, 12, print_report=True, unit='sec')
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ('slowest iteration 3: 79.00sec; p50 31.00sec, '
                       'p90 47.00sec')
    assert [line.split()[0] for line in out[-3:-1]] == ['other', 'gc']


# -- the garbage collector ---------------------------------------------------

GC = 0.5  # seconds a collection takes, exact in binary


class _Sleeper(object):
    # Collected in a reference cycle: its __del__ runs inside gc.
    def __init__(self, still):
        self.still = still
        self.cycle = self

    def __del__(self):
        self.still.sleep(GC)


def _collecting_updater(still):
    class Collecting(training.updaters.StandardUpdater):
        def update_core(self):
            super().update_core()
            _Sleeper(still)
            gc.collect()
    return Collecting


def test_gc_time_is_reported_beside_the_phases(still, tmp_path):
    trainer = make_slow_trainer(
        still, tmp_path, stop=4, updater=_collecting_updater(still))
    timed, log = run_timed(trainer)
    for figures in log:
        assert figures['gc'] == GC
        # Inside the update's last phase, and not added again.
        assert figures['optimizer'] == OPTIMIZER + GC
        assert figures['iteration'] == PLAIN + GC + SLOW / 2
    assert log[1]['slowest/gc'] == GC
    assert timed.summary()['gc'] == GC


def test_gc_outside_the_loop_is_not_counted(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=2)
    timed, log = run_timed(trainer)
    _Sleeper(still)
    gc.collect()
    assert timed.summary()['gc'] == 0.0


class _Interrupt(training.Extension):
    trigger = 3, 'iteration'

    def __call__(self, trainer):
        raise KeyboardInterrupt


@pytest.mark.parametrize('way_out', ['end', 'exception', 'interrupt'])
def test_gc_callback_only_while_the_loop_runs(still, tmp_path, way_out):
    before = list(gc.callbacks)
    trainer = make_slow_trainer(still, tmp_path, stop=4)
    during = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        during.append(len(gc.callbacks) - len(before))
        if way_out == 'exception' and trainer.updater.iteration == 2:
            raise Boom('boom')
    trainer.extend(look)
    if way_out == 'interrupt':
        trainer.extend(_Interrupt())
    expected = {'exception': Boom, 'interrupt': KeyboardInterrupt}
    if way_out == 'end':
        run_timed(trainer)
    else:
        with pytest.raises(expected[way_out]):
            run_timed(trainer)
    assert during and set(during) == {1}
    assert gc.callbacks == before


@pytest.mark.parametrize('link, figure', [
    ('loop/slowest', 'slowest'), ('loop/gc', 'gc'),
    ('loop/iteration/p90', 'iteration/p90'),
    ('loop/slowest/extension/LogReport', 'slowest/extension/LogReport')])
def test_tail_and_gc_keys_are_checked_against_links(link, figure):
    with pytest.raises(ValueError, match=(
            r'would both report `time/loop/{}`: TimedLinks the elapsed '
            r'time of the link {!r}, TimedLoop its figure {!r}'.format(
                figure, link, figure))):
        keys.check_loop_keys(['loop', link], False, False, ['LogReport'],
                             False)


def test_timeline_work_at_a_start_is_the_next_iterations(
        still, tmp_path, monkeypatch):
    # Timeline sets a window up at the end of the iteration before it,
    # after TimedLoop's report there: that work is that iteration's.
    from chainer_hookext import Timeline
    from chainer_hookext.extensions import _timeline_recorder

    original = _timeline_recorder.Recorder.start

    def slow(self, *args, **kwargs):
        still.sleep(SLOW * 4)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(_timeline_recorder.Recorder, 'start', slow)
    trainer = make_slow_trainer(still, tmp_path, stop=6)
    trainer.extend(Timeline(iterations=1), trigger=(2, 'iteration'))
    _, log = run_timed(trainer)
    for figures in log:
        slowest = figures['iteration/max']
        assert slowest == sum(
            v for k, v in figures.items()
            if k in ('slowest/data', 'slowest/forward', 'slowest/backward',
                     'slowest/optimizer', 'slowest/extensions',
                     'slowest/other'))
    # Set up at iteration 2's end, for the window at 3.
    assert log[1]['slowest'] == 2
    assert log[1]['slowest/extension/Timeline'] == SLOW * 4

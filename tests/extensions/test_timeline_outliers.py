"""Timeline(outliers=...): every iteration recorded, the slow ones written,
on a real Trainer with known delays on a still clock."""

import copy
import datetime
import gc
import itertools
import os
import pickle

import chainer
import numpy
import pytest
from chainer import training

from chainer_hookext import Timeline
from chainer_hookext.timing import phases
from chainer_hookext.timing import trace
from tests.conftest import Boom
from tests.conftest import DATA
from tests.conftest import FakeComm
from tests.conftest import SlowIterator
from tests.conftest import make_slow_trainer
from tests.conftest import snapshot_of
from tests.conftest import hook_keys
from tests.extensions.test_timed_loop_tail import PLAIN
from tests.extensions.test_timed_loop_tail import _stalling
from tests.extensions.test_timeline import assert_nested_per_thread
from tests.extensions.test_timeline import spans

#: The stalls' seconds, well above 3 times any iteration without one.
STALL = 256.0


class StallingIterator(SlowIterator):
    """A :class:`SlowIterator` whose ``next`` for the update of the
    iterations in ``stalls`` takes so many seconds more."""

    def __init__(self, clock, stalls, *args, **kwargs):
        super().__init__(clock, *args, **kwargs)
        self.stalls = stalls
        self.calls = 0

    def __next__(self):
        self.calls += 1  # one call per update: the iteration's number
        self.clock.sleep(self.stalls.get(self.calls, 0.0))
        return super().__next__()

    next = __next__


def make_trainer(still, out, stop=100, data=(), extension=()):
    """A slow trainer (``slow`` at even iterations) whose iterator stalls
    at the iterations ``data`` and an extension ``stall`` at the
    iterations ``extension``."""
    trainer = make_slow_trainer(still, out, stop=stop)
    iterator = trainer.updater.get_iterator('main')
    trainer.updater._iterators['main'] = StallingIterator(
        still, {i: STALL for i in data}, iterator.dataset, 8, shuffle=False)
    trainer.extend(_stalling(still, {i: STALL for i in extension}),
                   name='stall')
    return trainer


def seconds(iteration, stalled=()):
    """An iteration's seconds: the slow extension at even ones."""
    return PLAIN + (16.0 if iteration % 2 == 0 else 0.0) + (
        STALL if iteration in stalled else 0.0)


def about(part, number, part_seconds, median, runs, baseline, threshold,
          grew_most, grew_seconds, why, stalled=()):
    """What an outlier trace of ``make_trainer`` says about iteration
    ``number``, its ``part`` judged against its own history."""
    return {
        'iteration': number, 'seconds': seconds(number, stalled),
        'part': part, 'part_seconds': part_seconds,
        'median_seconds': median, 'runs': runs,
        'baseline_seconds': baseline,
        'ratio': None if baseline is None else part_seconds / baseline,
        'threshold_seconds': threshold,
        'grew_most': grew_most, 'grew_seconds': grew_seconds,
        'previous_iteration': number - 1,
        'previous_seconds': seconds(number - 1, stalled), 'why': why}


def never(trainer):
    return False


def run(trainer, timeline, trigger=never):
    trainer.extend(timeline, trigger=trigger)
    trainer.run()
    return read_folder(trainer)


def read_folder(trainer):
    # {file name: (events, otherData)}
    folder = os.path.join(trainer.out, 'timeline')
    return {name: trace.read(os.path.join(folder, name), other=True)
            for name in sorted(os.listdir(folder))}


def phase_in(events, iteration, name):
    # The seconds of the spans ``name`` (a phase or an extension call)
    # inside the slice ``iteration N``.
    slice_, = [e for e in spans(events, 'iteration')
               if e['name'] == 'iteration {}'.format(iteration)]
    return sum(e['dur'] for e in spans(events) if e['name'] == name
               and e['cat'] in ('phase', 'extension')
               and slice_['ts'] <= e['ts'] < slice_['ts'] + slice_['dur']
               ) / 1e6


def test_stalls_written_with_the_previous_iteration(still, tmp_path):
    trainer = make_trainer(still, tmp_path, data=[40], extension=[70])
    files = run(trainer, Timeline(outliers=True))
    assert sorted(files) == ['outlier_iteration_40.json.gz',
                             'outlier_iteration_70.json.gz']
    stalled = (40, 70)
    for number, phase, figure in ((40, 'data', 'data'),
                                  (70, 'stall', 'extension/stall')):
        events, other = files['outlier_iteration_{}.json.gz'.format(number)]
        assert_nested_per_thread(events)
        iterations = spans(events, 'iteration')
        assert [e['name'] for e in iterations] == [
            'iteration {}'.format(number - 1), 'iteration {}'.format(number)]
        assert [e['dur'] / 1e6 for e in iterations] == [
            seconds(number - 1), seconds(number, stalled)]
        # The stall is in its phase, in the outlier, not the one before.
        before = DATA if phase == 'data' else 0.0
        assert phase_in(events, number - 1, phase) == before
        assert phase_in(events, number, phase) == before + STALL
        # Link spans of both iterations: each has the model's call.
        forward = [e for e in spans(events, 'link_forward')
                   if e['name'] == 'main']
        assert len(forward) == 2
        # The update's median: 15 s over the 39 iterations before 40;
        # the extension's, 0 s over the 34 iterations calling ``slow``
        # and ``stall`` before 70, is below the update's, which it is
        # judged against.
        said = about(
            'update', 40, PLAIN + STALL, PLAIN, 39, PLAIN, 3 * PLAIN,
            'data', STALL, 'update: 271.00sec, 18.1x its median of '
            '15.00sec over 39 runs; data grew most since iteration 39, by '
            '256.00sec',
            stalled) if number == 40 else about(
            'extension/stall', 70, STALL, 0.0, 34, PLAIN, 3 * PLAIN,
            figure, STALL, "extension/stall: 256.00sec, 17.1x the "
            "update's median of 15.00sec (its own median: 0.00ns over 34 "
            "runs)", stalled)
        assert other == {'outlier': said}
        # Perfetto shows it on the outlier's slice.
        assert iterations[1]['args'] == dict(said, outlier=True)
        assert 'args' not in iterations[0]


def test_warmup_and_the_last_iteration(still, tmp_path):
    # 20 iterations are added before any is judged: the 21st is the
    # first.  The last iteration is judged when the run ends.
    trainer = make_trainer(still, tmp_path, stop=40, data=[5, 20, 21, 40])
    timeline = Timeline(outliers=True, compress=False)
    files = run(trainer, timeline)
    assert sorted(files) == ['outlier_iteration_21.json',
                             'outlier_iteration_40.json']
    events, other = files['outlier_iteration_40.json']
    assert [e['name'] for e in spans(events, 'iteration')] == [
        'iteration 39', 'iteration 40']
    assert other['outlier']['grew_most'] == 'data'
    assert timeline.written == [
        os.path.join(trainer.out, 'timeline', name) for name in sorted(
            files, key=lambda n: int(n.split('_')[2].split('.')[0]))]


def test_at_most_max_outliers_then_one_warning(still, tmp_path):
    trainer = make_trainer(still, tmp_path, extension=[30, 40, 50, 60])
    with pytest.warns(RuntimeWarning) as caught:
        files = run(trainer, Timeline(outliers=True, max_outliers=2))
    assert sorted(files) == ['outlier_iteration_30.json.gz',
                             'outlier_iteration_40.json.gz']
    message, = [str(w.message) for w in caught]
    assert 'no longer written' in message
    assert 'iteration 50' in message
    assert 'max_outliers' in message


@pytest.mark.parametrize('outliers,written,threshold', [
    (10.0, [50], 10 * 15.0),
    (numpy.float64(2.5), [30, 50], 2.5 * 15.0),
    (datetime.timedelta(seconds=100), [30, 50], 100.0),
    (datetime.timedelta(seconds=200), [50], 200.0),
])
def test_factor_and_absolute_threshold(
        still, tmp_path, outliers, written, threshold):
    # Iteration 30 takes 31 + 80 s, 50 takes 31 + 512 s, in the extension
    # ``stall`` (0 s otherwise, judged against the update's median, 15 s).
    trainer = make_slow_trainer(still, tmp_path, stop=60)
    trainer.extend(_stalling(still, {30: 80.0, 50: 512.0}), name='stall')
    files = run(trainer, Timeline(outliers=outliers))
    assert sorted(files) == sorted(
        'outlier_iteration_{}.json.gz'.format(i) for i in written)
    _, other = files['outlier_iteration_50.json.gz']
    assert other['outlier']['part'] == 'extension/stall'
    assert other['outlier']['median_seconds'] == 0.0
    assert other['outlier']['baseline_seconds'] == 15.0
    assert other['outlier']['threshold_seconds'] == threshold
    assert other['outlier']['seconds'] == 31.0 + 512.0
    assert other['outlier']['part_seconds'] == 512.0


def test_bad_arguments():
    for value in ('yes', [3.0], datetime.datetime(2024, 1, 1)):
        with pytest.raises(TypeError, match=r'`Timeline\(outliers=.*\)` is '
                           r'not a flag, a factor or a datetime.timedelta: '
                           r'use True'):
            Timeline(outliers=value)
    for value, shown in ((1.0, '1.0'), (0.5, '0.5'), (float('nan'), 'nan'),
                         (numpy.float64('inf'), r'numpy.float64\(inf\)')):
        with pytest.raises(ValueError, match=r'`Timeline\(outliers={}\)` '
                           r'is not a factor above 1: use True'.format(
                               shown)):
            Timeline(outliers=value)
    for value in (datetime.timedelta(0), datetime.timedelta(seconds=-1)):
        with pytest.raises(ValueError, match=r'is not above 0: use True'):
            Timeline(outliers=value)
    with pytest.raises(ValueError, match=r'`Timeline\(max_outliers=0\)` is '
                       r'below 1'):
        Timeline(outliers=True, max_outliers=0)
    with pytest.raises(TypeError, match=r'`Timeline\(max_outliers=2.5\)` '
                       r'is not an integer'):
        Timeline(outliers=True, max_outliers=2.5)
    assert Timeline(outliers=numpy.True_).outliers == 3.0
    assert Timeline(outliers=False).outliers is None
    assert Timeline(outliers=4).outliers == 4.0


def snapshot_at(iteration, target):
    @training.make_extension(trigger=(iteration, 'iteration'), priority=-100)
    def snapshot(trainer):
        target.update(snapshot_of(trainer))
    return snapshot


def test_resume_continues_the_median_and_the_count(still, tmp_path):
    stalls = dict(extension=[40, 70, 85])
    whole = make_trainer(still, tmp_path / 'whole', **stalls)
    with pytest.warns(RuntimeWarning, match='iteration 85 is one'):
        expected = run(whole, Timeline(outliers=True, max_outliers=2))
    assert sorted(expected) == ['outlier_iteration_40.json.gz',
                                'outlier_iteration_70.json.gz']
    # Snapshot at 55, where the first run ends; the second goes on.
    target = {}
    first = make_trainer(still, tmp_path / 'run', stop=55, **stalls)
    first.extend(snapshot_at(55, target))
    run(first, Timeline(outliers=True, max_outliers=2))
    second = make_trainer(still, tmp_path / 'run', **stalls)
    timeline = Timeline(outliers=True, max_outliers=2)
    second.extend(timeline, trigger=never)
    chainer.serializers.NpzDeserializer(target).load(second)
    with pytest.warns(RuntimeWarning, match='iteration 85 is one') as caught:
        second.run()
    assert len(caught) == 1
    # 70 within 20 iterations of the resume: the median went on.
    assert [os.path.basename(p) for p in timeline.written] == [
        'outlier_iteration_70.json.gz']
    files = read_folder(second)
    assert sorted(files) == sorted(expected)
    # The extension's runs beside ``slow``: 2-54 (the snapshot's, taken
    # during 55) and 56-68.
    _, other = files['outlier_iteration_70.json.gz']
    assert other['outlier']['part'] == 'extension/stall'
    assert other['outlier']['runs'] == 34
    assert other == expected['outlier_iteration_70.json.gz'][1]
    assert timeline._outliers.written == 2


def earlier_version(target):
    # A snapshot of an earlier version's Timeline(outliers=True): the
    # seconds of the last iterations, no history per part.
    for key in [k for k in target if '/Timeline/outlier' in k]:
        del target[key]
    target['updater/Timeline/outlier_seconds'] = numpy.full(29, 15.0)
    target['updater/Timeline/outliers_written'] = numpy.asarray(0)


@pytest.mark.parametrize('outliers', [None, True])
def test_snapshot_without_outlier_state_starts_afresh(
        still, tmp_path, outliers):
    # A snapshot of a Timeline without outliers (or of an earlier
    # version): no warning, a new warm-up from the resume.
    target = {}
    first = make_trainer(still, tmp_path, stop=30)
    first.extend(snapshot_at(30, target))
    run(first, Timeline(outliers=outliers))
    assert 'updater/iteration' in target
    if outliers:
        assert any('/Timeline/outlier_history/' in k for k in target)
        earlier_version(target)
    second = make_trainer(still, tmp_path, stop=80, extension=[45, 60])
    timeline = Timeline(outliers=True)
    second.extend(timeline, trigger=never)
    chainer.serializers.NpzDeserializer(target).load(second)
    second.run()  # warnings are errors
    assert [os.path.basename(p) for p in timeline.written] == [
        'outlier_iteration_60.json.gz']


def test_window_and_outliers_together(still, tmp_path):
    at_40 = training.triggers.ManualScheduleTrigger(40, 'iteration')
    plain = make_trainer(still, tmp_path / 'plain', stop=50, data=[41])
    window = run(plain, Timeline(iterations=2), trigger=at_40)
    both = make_trainer(still, tmp_path / 'both', stop=50, data=[41])
    timeline = Timeline(iterations=2, outliers=True)
    registered = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        registered.append(hook_keys(chainer._get_link_hooks()))
    both.extend(look)
    files = run(both, timeline, trigger=training.triggers.
                ManualScheduleTrigger(40, 'iteration'))
    assert sorted(files) == ['iteration_41.json.gz',
                             'outlier_iteration_41.json.gz']
    # One hook all along, registered once.
    assert registered == [['chainer_hookext.Timeline']] * 50
    # The window holds what a window alone holds: its iterations and
    # their link spans.
    events = files['iteration_41.json.gz'][0]
    assert_nested_per_thread(events)
    for category in ('iteration', 'link_forward', 'link_backward'):
        assert [(e['name'], e['ts'], e['dur'])
                for e in spans(events, category)] == [
            (e['name'], e['ts'], e['dur'])
            for e in spans(window['iteration_41.json.gz'][0], category)]
    outlier, other = files['outlier_iteration_41.json.gz']
    assert [e['name'] for e in spans(outlier, 'iteration')] == [
        'iteration 40', 'iteration 41']
    assert other['outlier']['grew_most'] == 'data'


def test_own_writing_is_not_the_next_iterations_time(
        still, tmp_path, monkeypatch):
    # Writing a trace takes 1000 s: Timeline's own work, at the start of
    # the next iteration, left out of that iteration's seconds.
    write = trace.write

    def slow_write(*args, **kwargs):
        still.sleep(1000.0)
        return write(*args, **kwargs)
    monkeypatch.setattr(trace, 'write', slow_write)
    trainer = make_trainer(still, tmp_path, stop=50, data=[40])
    files = run(trainer, Timeline(outliers=True))
    assert sorted(files) == ['outlier_iteration_40.json.gz']
    rule = trainer.get_extension('Timeline')._outliers
    assert rule.history.update.median() == PLAIN
    assert phases.ExtensionPhase('Timeline') not in {
        phase for called in rule.history.extensions for phase in called}


def test_memory_bounded_and_nothing_when_off(still, tmp_path):
    # Outliers on: the spans of the running and the previous iteration
    # only, the same count at each iteration.  Off: no hook, no list.
    kept = {}
    for outliers in (True, None):
        trainer = make_trainer(still, tmp_path / str(outliers), stop=60)
        timeline = Timeline(outliers=outliers)
        counts = kept[outliers] = []

        @training.make_extension(trigger=(1, 'iteration'))
        def look(trainer):
            pieces = [timeline._recorder._piece]
            if timeline._previous is not None:
                pieces.append(timeline._previous.piece)
            counts.append((
                len(chainer._get_link_hooks()),
                len(timeline._clock.span_lists),
                len(timeline._clock.gc_lists),
                sum(len(p.links.forward) + len(p.links.backward)
                    + len(p.phase_spans) for p in pieces if p is not None)))
        trainer.extend(look)
        run(trainer, timeline)
    on = kept[True]
    assert [c[:3] for c in on] == [(1, 1, 1)] * 60
    assert len({c[3] for c in on[2:]}) == 1 and on[2][3] > 0
    assert kept[None] == [(0, 0, 0, 0)] * 60


class Raising(training.Extension):
    """Raises ``error`` during iteration ``at``."""

    trigger = 1, 'iteration'

    def __init__(self, error, at):
        self.error = error
        self.at = at

    def __call__(self, trainer):
        if trainer.updater.iteration == self.at:
            raise self.error


@pytest.mark.parametrize('error', [Boom('boom'), KeyboardInterrupt()])
def test_nothing_left_on_every_way_out(still, tmp_path, user_state, error):
    trainer = make_trainer(still, tmp_path, stop=60, data=[30])
    timeline = Timeline(iterations=3, outliers=True)
    trainer.extend(timeline, trigger=training.triggers.
                   ManualScheduleTrigger(33, 'iteration'))
    trainer.extend(Raising(error, 35), name='raising')
    state = user_state(trainer)
    with pytest.raises(type(error)):
        trainer.run()
    assert state.changes() == []
    assert chainer._get_link_hooks() == {}
    assert chainer.get_function_hooks() == {}
    assert not timeline._recorder.running and timeline._window is None
    assert timeline._timer.recording is None
    # The window open at the error is written, the iteration of the
    # error is not judged; no file left half written.
    names = sorted(os.listdir(os.path.join(trainer.out, 'timeline')))
    assert names == ['iteration_34.json.gz', 'outlier_iteration_30.json.gz']
    timeline.finalize()  # again: nothing to do
    assert chainer._get_link_hooks() == {}


def test_nothing_left_after_a_normal_end_or_a_failed_start(
        still, tmp_path, user_state):
    from tests.conftest import FailingInit

    trainer = make_trainer(still, tmp_path, stop=30)
    timeline = Timeline(outliers=True)
    trainer.extend(timeline, trigger=never)
    state = user_state(trainer)
    trainer.run()
    assert state.changes() == [] and chainer._get_link_hooks() == {}
    assert not timeline._recorder.running
    # Reused in a trainer whose run fails before training.
    failing = make_trainer(still, tmp_path / 'failing', stop=30)
    failing.extend(timeline, trigger=never)
    failing.extend(FailingInit())
    with pytest.raises(Boom):
        failing.run()
    assert chainer._get_link_hooks() == {}
    assert gc.callbacks == state.gc_callbacks


class Copying(training.Extension):
    """Pickles and deep-copies the whole trainer at the iterations ``at``;
    the copies are not in its own copies."""

    trigger = 1, 'iteration'

    def __init__(self, at):
        self.at = at
        self.copies = []

    def __getstate__(self):
        return {'at': self.at, 'copies': []}

    def __call__(self, trainer):
        if trainer.updater.iteration in self.at:
            self.copies.append(pickle.loads(pickle.dumps(trainer)))
            self.copies.append(copy.deepcopy(trainer))


def test_trainer_pickled_and_copied_during_training(tmp_path):
    # A real clock: every iteration after the warm-up is over 1 us.
    from tests.conftest import make_trainer as make_real_trainer

    trainer = make_real_trainer(tmp_path, stop=(25, 'iteration'))
    copying = Copying((1, 21, 22, 23))
    trainer.extend(copying)
    timeline = Timeline(iterations=2, max_outliers=2,
                        outliers=datetime.timedelta(microseconds=1))
    with pytest.warns(RuntimeWarning, match='no longer written'):
        files = run(trainer, timeline, trigger=training.triggers.
                    ManualScheduleTrigger(21, 'iteration'))
    assert sorted(files) == ['iteration_22.json.gz',
                             'outlier_iteration_21.json.gz',
                             'outlier_iteration_22.json.gz']
    assert len(copying.copies) == 8
    for copied in copying.copies:
        extension = copied.get_extension('Timeline')
        assert extension._recorder._handle is None  # registered nowhere
    assert chainer._get_link_hooks() == {}


def test_each_rank_writes_its_own(still, tmp_path, monkeypatch):
    # Ranks judge apart: never gathered, the rank in the file's name.
    comm = FakeComm(1, [None])
    trainer = make_trainer(still, tmp_path / 'mn', stop=30, data=[25])
    files = run(trainer, Timeline(outliers=True, comm=comm))
    assert sorted(files) == ['outlier_iteration_25_rank1.json.gz']
    assert comm.gathered == []
    events, _ = files['outlier_iteration_25_rank1.json.gz']
    assert {e['pid'] for e in spans(events)} == {2}
    monkeypatch.setenv('OMPI_COMM_WORLD_RANK', '3')
    trainer = make_trainer(still, tmp_path / 'launcher', stop=30, data=[25])
    files = run(trainer, Timeline(outliers=True))
    assert sorted(files) == ['outlier_iteration_25_rank3.json.gz']


# -- each part judged against its own history ---------------------------------

def scheduled(still, every, usual, slower=None):
    """An extension called every ``every`` iterations, taking ``usual``
    seconds, or ``slower[iteration]`` at those iterations."""
    slower = slower or {}

    @training.make_extension(trigger=(every, 'iteration'))
    def work(trainer):
        still.sleep(slower.get(trainer.updater.iteration, usual))
    return work


def slow_steps(still, trainer, steps):
    """The optimizer's update takes ``steps[iteration]`` seconds more."""
    updates = itertools.count(1)
    trainer.updater.get_optimizer('main').add_hook(
        lambda optimizer: still.sleep(steps.get(next(updates), 0.0)),
        name='slow_step')


def test_scheduled_extensions_at_their_usual_cost_are_no_outliers(
        still, tmp_path):
    # An evaluation every 10 iterations (8.5 times the update) and a plot
    # every 25 (34 times): each judged against its own runs; ``stall``,
    # 0 s at every iteration, takes 30 s once, less than 3 updates.
    trainer = make_trainer(still, tmp_path, stop=200)
    trainer.extend(scheduled(still, 10, 128.0), name='evaluate')
    trainer.extend(scheduled(still, 25, 512.0), name='plot')
    timeline = Timeline(outliers=True)
    trainer.extend(_stalling(still, {55: 30.0}), name='blip')
    files = run(trainer, timeline)
    assert sorted(files) == []
    # Bounded: the last 50 runs of each part; an extension's in the
    # iterations calling the same extensions.
    rule = timeline._outliers
    assert len(rule.history.update) == 50
    called = {','.join(sorted(p.name for p in c)): {
        p.name: len(h) for p, h in runs.items()}
        for c, runs in rule.history.extensions.items()}
    assert called == {
        'blip,stall': dict(blip=50, stall=50),  # 96 odd iterations
        'blip,slow,stall': dict(blip=50, slow=50, stall=50),  # 80
        'blip,evaluate,slow,stall': dict(blip=16, evaluate=16, slow=16,
                                         stall=16),
        'blip,plot,stall': dict(blip=4, plot=4, stall=4),
        'blip,evaluate,plot,slow,stall': dict(blip=4, evaluate=4, plot=4,
                                              slow=4, stall=4)}


def test_a_data_stall_is_an_outlier_beside_scheduled_extensions(
        still, tmp_path):
    trainer = make_trainer(still, tmp_path, stop=100, data=[75])
    trainer.extend(scheduled(still, 10, 128.0), name='evaluate')
    files = run(trainer, Timeline(outliers=True))
    assert sorted(files) == ['outlier_iteration_75.json.gz']
    said = files['outlier_iteration_75.json.gz'][1]['outlier']
    assert said['part'] == 'update'
    assert said['ratio'] == (PLAIN + STALL) / PLAIN
    assert said['grew_most'] == 'data'
    assert said['why'] == ('update: 271.00sec, 18.1x its median of '
                           '15.00sec over 50 runs; data grew most since '
                           'iteration 74, by 256.00sec')


def test_a_slow_step_is_an_outlier(still, tmp_path):
    trainer = make_trainer(still, tmp_path, stop=100)
    trainer.extend(scheduled(still, 10, 128.0), name='evaluate')
    slow_steps(still, trainer, {60: 64.0})
    files = run(trainer, Timeline(outliers=True))
    assert sorted(files) == ['outlier_iteration_60.json.gz']
    said = files['outlier_iteration_60.json.gz'][1]['outlier']
    assert (said['part'], said['part_seconds'], said['median_seconds'],
            said['runs']) == ('update', PLAIN + 64.0, PLAIN, 50)
    assert (said['grew_most'], said['grew_seconds']) == ('optimizer', 64.0)


def test_an_extension_ten_times_slower_than_its_runs_is_an_outlier(
        still, tmp_path):
    # Iteration 70's update and other extensions as usual: only the
    # evaluation grew, 10 times its 6 runs before.
    trainer = make_trainer(still, tmp_path, stop=100)
    trainer.extend(scheduled(still, 10, 128.0, {70: 1280.0}),
                   name='evaluate')
    files = run(trainer, Timeline(outliers=True))
    assert sorted(files) == ['outlier_iteration_70.json.gz']
    events, other = files['outlier_iteration_70.json.gz']
    said = other['outlier']
    assert said == dict(
        said, iteration=70, seconds=seconds(70) + 1280.0,
        part='extension/evaluate', part_seconds=1280.0,
        median_seconds=128.0, runs=6, baseline_seconds=128.0, ratio=10.0,
        threshold_seconds=3 * 128.0, grew_most='extension/evaluate',
        grew_seconds=1280.0 - 128.0,
        why='extension/evaluate: 1280.00sec, 10.0x its median of '
            '128.00sec over 6 runs')
    assert phase_in(events, 70, 'evaluate') == 1280.0


@pytest.mark.parametrize('outliers,written', [
    (True, [120]),
    (datetime.timedelta(seconds=300), [30, 120]),
])
def test_a_part_is_judged_after_three_runs(
        still, tmp_path, outliers, written):
    # ``first`` runs at 30 (512 s: its first run, slow), 60 and 90 (64 s),
    # then 120 (640 s, 10 times its median): not judged before its
    # fourth run, unless the absolute threshold says so.
    trainer = make_trainer(still, tmp_path, stop=130)
    at = training.triggers.ManualScheduleTrigger([30, 60, 90, 120],
                                                 'iteration')
    costs = {30: 512.0, 120: 640.0}

    @training.make_extension(trigger=at)
    def first(trainer):
        still.sleep(costs.get(trainer.updater.iteration, 64.0))
    trainer.extend(first)
    files = run(trainer, Timeline(outliers=outliers))
    assert sorted(files) == sorted(
        f'outlier_iteration_{i}.json.gz' for i in written)
    said = files['outlier_iteration_120.json.gz'][1]['outlier']
    assert (said['part'], said['median_seconds'], said['runs'],
            said['ratio']) == ('extension/first', 64.0, 3, 10.0)
    if 30 in written:
        said = files['outlier_iteration_30.json.gz'][1]['outlier']
        assert said == dict(
            said, part='extension/first', part_seconds=512.0,
            median_seconds=None, runs=0, baseline_seconds=None, ratio=None,
            threshold_seconds=300.0, grew_seconds=512.0,
            why='extension/first: 512.00sec, its first run')

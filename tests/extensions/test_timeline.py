"""Timeline on a real Trainer, with known delays on a still clock."""

import gc
import os
import time

import chainer
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLinks
from chainer_hookext import Timeline
from chainer_hookext.timing import phases as phases_module
from chainer_hookext.timing import spans as spans_module
from chainer_hookext.timing import trace
from chainer_hookext.timing import trace_events
from tests.conftest import BACKWARD
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import OPTIMIZER
from tests.conftest import SLOW
from tests.conftest import make_slow_trainer
from tests.extensions import test_timed_links_update as update_tests
from tests.extensions import test_timed_loop_tail as tail_tests


UPDATE = DATA + FORWARD + BACKWARD + OPTIMIZER


def run_with_timeline(trainer, timeline=None, **kwargs):
    if timeline is None:
        timeline = Timeline(**kwargs)
    trainer.extend(timeline, trigger=(2, 'iteration'))
    trainer.run()
    folder = os.path.join(trainer.out, 'timeline')
    return timeline, {name: trace.read(os.path.join(folder, name))
                      for name in sorted(os.listdir(folder))}


def spans(events, category=None):
    return [e for e in events if e['ph'] == 'X'
            and (category is None or e['cat'] == category)]


def assert_nested(events):
    # Every span closes, inside its parent: no two spans partly overlap.
    stack = []
    for e in sorted(spans(events), key=lambda e: (e['ts'], -e['dur'])):
        assert e['dur'] >= 0
        while stack and e['ts'] >= stack[-1]['ts'] + stack[-1]['dur']:
            stack.pop()
        if stack:
            parent = stack[-1]
            assert e['ts'] + e['dur'] <= parent['ts'] + parent['dur'], (
                e, parent)
        stack.append(e)


def test_windows_spans_and_known_delays(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=8)
    timed = TimedLinks()
    trainer.extend(timed, trigger=(8, 'iteration'))
    _, files = run_with_timeline(trainer, iterations=2)
    # Fired at 2 (window 3-4), at 4 (inside the window: skipped), at 6.
    assert sorted(files) == ['iteration_3.json.gz', 'iteration_7.json.gz']
    events = files['iteration_3.json.gz']
    assert_nested(events)
    names = {e['args']['name'] for e in events if e['ph'] == 'M'
             and e['name'] in ('process_name', 'thread_name')}
    assert names == {'rank 0', 'training loop'}
    iterations = spans(events, 'iteration')
    assert [e['name'] for e in iterations] == ['iteration 3', 'iteration 4']
    # The slow extension runs at even iterations.
    assert [e['dur'] for e in iterations] == [UPDATE * 1e6, (
        UPDATE + SLOW) * 1e6]
    phases = {}
    for e in spans(events, 'phase'):
        phases[e['name']] = phases.get(e['name'], 0) + e['dur'] / 1e6
    # Phases follow one another, as in TimedLoop.
    assert phases == {'data': 2 * DATA, 'forward': 2 * FORWARD,
                      'backward': 2 * BACKWARD, 'optimizer': 2 * OPTIMIZER}
    slow = [e for e in spans(events, 'extension') if e['name'] == 'slow']
    assert [e['dur'] / 1e6 for e in slow] == [SLOW]
    # Link spans: each call, nested; sums as TimedLinks reports.
    forward = spans(events, 'link_forward')
    assert [e['name'] for e in forward].count('main/predictor/l1') == 2
    per_iteration = timed.summary(by='name')['main']['elapsed_time'] / 8
    main = sum(e['dur'] for e in forward if e['name'] == 'main') / 1e6
    assert main == 2 * per_iteration == 2 * FORWARD
    backward = spans(events, 'link_backward')
    first = [e['args']['link'] for e in backward][:4]
    assert first == ['main', 'main/predictor/l2', 'main/predictor',
                     'main/predictor/l1']
    assert backward[0]['name'] == 'main (backward)'
    assert backward[0]['dur'] / 1e6 == BACKWARD
    assert backward[0]['args']['steps'] == 2  # the loss, the sleeping node


def test_warmup_and_validation(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=8)
    trainer.extend(extensions.Evaluator(
        chainer.iterators.SerialIterator(
            trainer.updater.get_iterator('main').dataset, 16, repeat=False,
            shuffle=False), trainer.updater.get_optimizer('main').target),
        trigger=(4, 'iteration'))
    _, files = run_with_timeline(trainer, iterations=1, warmup=1,
                                 validation=True, compress=False)
    assert sorted(files) == ['iteration_4.json', 'iteration_8.json']
    events = files['iteration_4.json']
    validation = [e for e in spans(events, 'extension')
                  if e['name'] == 'validation']
    assert len(validation) == 1
    inside = [e for e in spans(events, 'link_forward')
              if e['ts'] >= validation[0]['ts']]
    assert {e['name'] for e in inside} >= {'main', 'main/predictor/l1'}


def test_resume_writes_the_same_windows_and_overwrites_none(still, tmp_path):
    first = make_slow_trainer(still, tmp_path, stop=4)
    _, files = run_with_timeline(first, iterations=2)
    assert list(files) == ['iteration_3.json.gz']
    target = {}
    first.serialize(chainer.serializers.DictionarySerializer(target))
    path = os.path.join(first.out, 'timeline', 'iteration_3.json.gz')
    written = os.path.getmtime(path), os.path.getsize(path)
    second = make_slow_trainer(still, tmp_path, stop=8)
    timeline = Timeline(iterations=2)
    second.extend(timeline, trigger=(2, 'iteration'))
    chainer.serializers.NpzDeserializer(target).load(second)
    second.run()
    folder = os.path.join(second.out, 'timeline')
    assert sorted(os.listdir(folder)) == [
        'iteration_3.json.gz', 'iteration_7.json.gz']
    assert (os.path.getmtime(path), os.path.getsize(path)) == written
    assert timeline.written == [os.path.join(folder, 'iteration_7.json.gz')]


def test_nothing_left_registered(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=3)
    run_with_timeline(trainer, iterations=4)  # the run ends in the window
    assert chainer._get_link_hooks() == {}
    assert chainer.get_function_hooks() == {}
    assert not [f for f in os.listdir(os.path.join(trainer.out, 'timeline'))
                if f.endswith('.tmp')]


def test_bad_arguments():
    with pytest.raises(ValueError, match=r'Timeline\(iterations=0\)'):
        Timeline(iterations=0)
    with pytest.raises(TypeError, match=r"Timeline\(warmup='1'\)"):
        Timeline(warmup='1')
    with pytest.raises(TypeError, match=r"Timeline\(compress='yes'\)"):
        Timeline(compress='yes')


def test_gpu_link_spans_resolved_when_the_window_ends(
        still, tmp_path, monkeypatch):
    from chainer_hookext.timing import clock as timing_clock

    resolved = []

    class FakeEvent(object):
        def __init__(self, event=None):  # a new event each time
            self.seconds = still()

    def elapsed(start, stop):
        resolved.append(still())
        return stop.seconds - start.seconds

    monkeypatch.setattr(timing_clock, 'is_gpu', lambda link: True)
    monkeypatch.setattr(timing_clock, 'record_event', FakeEvent)
    monkeypatch.setattr(timing_clock, 'elapsed', elapsed)
    trainer = make_slow_trainer(still, tmp_path, stop=4)
    _, files = run_with_timeline(trainer, iterations=2)
    # Every event was resolved at once, when the window ended.
    assert resolved and set(resolved) == {resolved[0]}
    events = files['iteration_3.json.gz']
    assert_nested(events)
    main = [e['dur'] / 1e6 for e in spans(events, 'link_forward')
            if e['name'] == 'main']
    assert main == [FORWARD, FORWARD]


# -- what a Perfetto user sees ------------------------------------------------

def perfetto_ns(event):
    # Perfetto's reading of a span: int(microseconds * 1000), truncated.
    start = int(event['ts'] * 1000.0)
    return start, start + int(event['dur'] * 1000.0)


def assert_nested_per_thread(events):
    # As Perfetto nests: in each thread, a span that starts inside another
    # ends inside it, to the nanosecond.
    threads = {}
    for e in spans(events):
        threads.setdefault((e['pid'], e['tid']), []).append(e)
    for thread_spans in threads.values():
        stack = []
        for e in sorted(thread_spans, key=lambda e: (
                perfetto_ns(e)[0], -perfetto_ns(e)[1])):
            start, end = perfetto_ns(e)
            while stack and start >= stack[-1][1]:
                stack.pop()
            if stack:
                assert end <= stack[-1][1], (e, stack[-1])
            stack.append((start, end))


def parent_of(event, candidates):
    start, end = perfetto_ns(event)
    inside = [c for c in candidates if c['tid'] == event['tid']
              and perfetto_ns(c)[0] <= start and end <= perfetto_ns(c)[1]]
    return min(inside, key=lambda c: c['dur'], default=None)


def test_names_tracks_and_one_nesting_rule(tmp_path):
    # A real clock: the model's call starts before its first function,
    # and the forward phase with it.
    from tests.conftest import make_trainer

    trainer = make_trainer(tmp_path, stop=(6, 'iteration'))
    _, files = run_with_timeline(trainer, iterations=2)
    events = files['iteration_3.json.gz']
    assert_nested_per_thread(events)
    named = {(e['name'], e['pid'], e['tid']): e['args']['name']
             for e in events if e['ph'] == 'M' and 'name' in e['args']}
    assert named == {('process_name', 1, 0): 'rank 0',
                     ('thread_name', 1, 1): 'training loop'}
    assert {e['pid'] for e in events} == {1}
    categories = {e['cat'] for e in spans(events)}
    assert categories == {'iteration', 'phase', 'extension', 'link_forward',
                          'link_backward'}
    assert not {e['name'] for e in spans(events)} & categories
    phase_spans = spans(events, 'phase')
    for category, phase in (('link_forward', 'forward'),
                            ('link_backward', 'backward')):
        links = spans(events, category)
        assert links
        for e in links:
            # iteration > phase > the links' spans, both ways.
            parent = parent_of(e, phase_spans)
            assert parent is not None and parent['name'] == phase, e
            assert parent_of(parent, spans(events, 'iteration'))
    forward = {e['name'] for e in spans(events, 'link_forward')}
    backward = {e['name'] for e in spans(events, 'link_backward')}
    assert 'main/predictor/l1' in forward
    assert 'main/predictor/l1 (backward)' in backward
    assert not forward & backward


def test_per_rank_file_names_its_rank(still, tmp_path, monkeypatch):
    monkeypatch.setenv('OMPI_COMM_WORLD_RANK', '1')
    trainer = make_slow_trainer(still, tmp_path)
    _, files = run_with_timeline(trainer, iterations=1)
    events = files['iteration_3_rank1.json.gz']
    process = [e for e in events if e['name'] == 'process_name']
    assert process == [{'name': 'process_name', 'ph': 'M', 'pid': 2,
                        'tid': 0, 'args': {'name': 'rank 1'}}]
    assert {e['pid'] for e in spans(events)} == {2}


class ForgetModel(chainer.Chain):
    """A classifier whose predictor runs under ``F.forget``: the sleeping
    node's forward runs again in backward."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        with self.init_scope():
            self.predictor = ForgetMLP(clock)

    def forward(self, x, t):
        return chainer.functions.softmax_cross_entropy(self.predictor(x), t)


class ForgetMLP(chainer.Chain):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        with self.init_scope():
            self.l1 = chainer.links.Linear(4, 3)

    def forward(self, x):
        def block(x):
            return SleepingForward(self.clock).apply((self.l1(x),))[0]
        return chainer.functions.forget(block, x)


class SleepingForward(chainer.FunctionNode):
    def __init__(self, clock):
        self.clock = clock

    def forward(self, inputs):
        self.clock.sleep(FORWARD)
        return inputs

    def backward(self, indexes, grad_outputs):
        return grad_outputs


def test_forget_recomputation_inside_the_callers_backward(still, tmp_path):
    from tests.conftest import make_trainer

    trainer = make_trainer(tmp_path, model=ForgetModel(still))
    _, files = run_with_timeline(trainer, iterations=1)
    events = files['iteration_3.json.gz']
    assert_nested_per_thread(events)
    backward = {e['name']: e for e in spans(events, 'link_backward')}
    # The recomputed forward is the backward of the link calling forget.
    assert backward['main/predictor (backward)']['dur'] == FORWARD * 1e6
    assert 'main/predictor/l1 (backward)' not in backward
    forward = spans(events, 'link_forward')
    assert [e['name'] for e in forward].count('main/predictor/l1') == 1


def test_gpu_spans_on_a_device_track_never_overrun(
        still, tmp_path, monkeypatch):
    from chainer_hookext.timing import clock as timing_clock

    lag = [0.0]

    class LaggingEvent(object):
        # The device runs behind the host, more and more.
        def __init__(self, event=None):  # a new event each time
            lag[0] += 5e-5
            self.seconds = still() + lag[0]

    monkeypatch.setattr(timing_clock, 'is_gpu', lambda link: True)
    monkeypatch.setattr(timing_clock, 'record_event', LaggingEvent)
    monkeypatch.setattr(timing_clock, 'elapsed',
                        lambda a, b: b.seconds - a.seconds)
    trainer = make_slow_trainer(still, tmp_path, stop=4)
    _, files = run_with_timeline(trainer, iterations=2)
    events = files['iteration_3.json.gz']
    assert_nested_per_thread(events)
    threads = {e['tid']: e['args']['name'] for e in events
               if e['name'] == 'thread_name'}
    assert threads == {1: 'training loop', 1001: 'device (CUDA events)'}
    assert {e['tid'] for e in spans(events) if e['cat'].startswith(
        'link_')} == {1001}


def test_second_timeline_refused(still, tmp_path, user_state):
    trainer = make_slow_trainer(still, tmp_path)
    trainer.extend(Timeline(), name='first')
    trainer.extend(Timeline(), name='second')
    state = user_state(trainer)
    with pytest.raises(ValueError, match=r"another Timeline extension \("):
        trainer.run()
    assert trainer.updater.iteration == 0
    assert chainer._get_link_hooks() == {}
    assert [c for c in state.changes() if 'stop_trigger' not in c] == []


def test_unwritable_folder_refused_before_training(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path)
    os.makedirs(trainer.out)
    with open(os.path.join(trainer.out, 'timeline'), 'w'):
        pass
    trainer.extend(Timeline())
    with pytest.raises(ValueError, match=r"Timeline cannot write its "
                       r"traces to '.*timeline'"):
        trainer.run()
    assert trainer.updater.iteration == 0


def test_failed_write_warns_once_and_training_goes_on(
        still, tmp_path, monkeypatch):
    def full_disk(path, events, compress=True, other=None):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(trace, 'write', full_disk)
    trainer = make_slow_trainer(still, tmp_path, stop=8)
    timeline = Timeline(iterations=1)
    trainer.extend(timeline, trigger=(2, 'iteration'))
    with pytest.warns(RuntimeWarning, match='No space left') as caught:
        trainer.run()
    assert trainer.updater.iteration == 8
    assert len(caught) == 1 and timeline.written == []


def snapshot_at(iteration, target):
    @chainer.training.make_extension(
        trigger=(iteration, 'iteration'), priority=-100)
    def snapshot(trainer):
        if not target:
            trainer.serialize(chainer.serializers.DictionarySerializer(
                target))
    return snapshot


def test_resumed_inside_a_window_writes_the_uninterrupted_windows(
        still, tmp_path):
    whole = make_slow_trainer(still, tmp_path / 'whole', stop=11)
    whole.extend(Timeline(iterations=2), trigger=(3, 'iteration'))
    whole.run()
    expected = sorted(os.listdir(os.path.join(whole.out, 'timeline')))
    assert expected == ['iteration_10.json.gz', 'iteration_4.json.gz',
                        'iteration_7.json.gz']
    # Snapshot at 4, inside the window 4-5, then the run ends there.
    target = {}
    first = make_slow_trainer(still, tmp_path / 'run', stop=4)
    first.extend(Timeline(iterations=2), trigger=(3, 'iteration'))
    first.extend(snapshot_at(4, target))
    first.run()
    second = make_slow_trainer(still, tmp_path / 'run', stop=11)
    timeline = Timeline(iterations=2)
    second.extend(timeline, trigger=(3, 'iteration'))
    second.extend(snapshot_at(4, {}))
    chainer.serializers.NpzDeserializer(target).load(second)
    with pytest.warns(RuntimeWarning, match='iteration_4.json.gz exists'):
        second.run()
    assert sorted(os.listdir(os.path.join(second.out, 'timeline'))) == (
        expected)
    assert [os.path.basename(p) for p in timeline.written] == [
        'iteration_7.json.gz', 'iteration_10.json.gz']


def test_reused_timeline_writes_only_its_runs_windows(still, tmp_path):
    timeline = Timeline(iterations=2)
    first = make_slow_trainer(still, tmp_path / 'first', stop=4)
    first.extend(timeline, trigger=(4, 'iteration'))  # fires at the end
    first.run()
    second = make_slow_trainer(still, tmp_path / 'second', stop=4)
    second.extend(timeline, trigger=lambda trainer: False)
    second.run()
    assert not os.listdir(os.path.join(second.out, 'timeline'))


def test_times_read_back_exactly_and_nan_refused(tmp_path):
    late = range(10 ** 9, 10 ** 9 + 10 ** 7, 7919)
    for ns in list(range(0, 3000)) + list(late):
        us = trace.microseconds(ns)
        assert int(us * 1000.0) == ns and round(us * 1000.0) == ns
    path = str(tmp_path / 'nan.json')
    event = trace.complete('x', 'phase', 0, 10, 1, 1, {'share': float('nan')})
    with pytest.raises(ValueError):
        trace.write(path, [event], compress=False)
    assert os.listdir(str(tmp_path)) == []


def test_args_carry_no_float_noise(tmp_path):
    from tests.conftest import make_trainer

    trainer = make_trainer(tmp_path, stop=(4, 'iteration'))
    _, files = run_with_timeline(trainer, iterations=1)
    backward = spans(files['iteration_3.json.gz'], 'link_backward')
    assert backward
    for e in backward:
        assert isinstance(e['args']['steps_ns'], int)
        assert e['args']['share'] == round(e['args']['share'], 4)


def test_ranks_on_one_time_axis(still, tmp_path, monkeypatch):
    # Rank 1 started its window 0.5 s (host clock) before rank 0.
    from tests.conftest import FakeComm

    monkeypatch.setattr(time, 'time', lambda: 1000.0)
    other = trace.complete('iteration 3', 'iteration', 0, 10 ** 6, 2, 2)
    comm = FakeComm(0, [(999.5, [other])])
    trainer = make_slow_trainer(still, tmp_path)
    _, files = run_with_timeline(trainer, iterations=1, comm=comm)
    events = spans(files['iteration_3.json.gz'], 'iteration')
    assert [(e['pid'], e['ts']) for e in events] == [(1, 5e5), (2, 0.0)]


# -- the spans are the TimerHook's own measurements ---------------------------

def test_spans_add_up_to_the_timers_figures(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=8)
    timeline, files = run_with_timeline(trainer, iterations=2)
    events = [e for name in files for e in files[name]]
    summary = timeline._timer.summary(by='name', mode='train')
    for name, figures in summary.items():
        forward = sum(e['dur'] for e in spans(events, 'link_forward')
                      if e['name'] == name) / 1e6
        backward = sum(e['args']['steps_ns'] for e in spans(
            events, 'link_backward') if e['args']['link'] == name) / 1e9
        assert forward == figures['elapsed_time'], name
        assert backward == figures['backward_self_time'], name
    # Outside windows the hook's hot path is its class's.
    assert 'forward_postprocess' not in vars(timeline._timer)


def test_spans_follow_a_device_change(still, monkeypatch):
    from chainer_hookext import TimerHook
    from chainer_hookext.timing import clock as timing_clock
    from chainer_hookext.timing import spans as spans_module
    from tests.conftest import SlowModel
    from tests.conftest import data

    class FakeEvent(object):
        def __init__(self, event=None):  # a new event each time
            self.seconds = still() + 100.0  # the device's own time axis

    on_gpu = [False]
    monkeypatch.setattr(timing_clock, 'is_gpu', lambda link: on_gpu[0])
    monkeypatch.setattr(timing_clock, 'record_event', FakeEvent)
    monkeypatch.setattr(timing_clock, 'elapsed',
                        lambda a, b: b.seconds - a.seconds)
    model = SlowModel(still)
    hook = TimerHook(backward=True)
    recording = spans_module.Recording()
    with hook:
        hook.start_spans(recording)
        model(*data()).backward()  # on the host
        on_gpu[0] = True
        model(*data()).backward()  # on a GPU: CUDA events
        hook.stop_spans()
        assert hook.forward_postprocess == hook.gpu_forward_postprocess
    recording.resolve()
    main = [s for s in recording.forward  # no scope: named by path
            if spans_module.name_of(s.record) == '/']
    assert [(s.start, s.end) for s in main] == [
        (0.0, FORWARD), (FORWARD + BACKWARD, 2 * FORWARD + BACKWARD)]
    steps = [(spans_module.name_of(s.record), s.end - s.start)
             for s in recording.backward]
    assert steps.count(('/', BACKWARD)) == 2
    assert {type(s.start) for s in recording.backward} == {float}


def test_link_spans_are_the_updates_calls_whatever_the_config(tmp_path):
    # The update runs with train off (frozen statistics), an extension
    # calls the model and backward with train on: only the update's calls
    # and steps are spans, as TimedLinks counts them.
    trainer = update_tests.make_trainer(
        tmp_path, updater=update_tests.FrozenStatisticsUpdater)
    trainer.extend(update_tests.probe(trainer), name='probe')
    _, files = run_with_timeline(trainer, iterations=2)
    events = files['iteration_3.json.gz']
    forward = [e['name'] for e in spans(events, 'link_forward')]
    assert sorted(forward) == sorted(
        ['main', 'main/predictor', 'main/predictor/l1',
         'main/predictor/l2'] * 2)
    probe = [e for e in spans(events, 'extension') if e['name'] == 'probe']
    assert len(probe) == 2
    for e in spans(events, 'link_forward') + spans(events, 'link_backward'):
        assert not any(p['ts'] <= e['ts'] < p['ts'] + p['dur']
                       for p in probe), e
    assert spans(events, 'link_backward')


def test_each_collection_in_a_window_is_a_span_in_its_phase(still, tmp_path):
    # The update ends with a forced collection of a cycle whose __del__
    # takes GC seconds: inside the optimizer phase, the update's last.
    trainer = make_slow_trainer(
        still, tmp_path, stop=6, updater=tail_tests._collecting_updater(still))
    timeline = Timeline(iterations=2)
    recording = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):  # whether the clock keeps collections, per iteration
        recording.append(len(timeline._clock.gc_lists))
    trainer.extend(look)
    enabled = gc.isenabled()
    gc.disable()  # no automatic collection: the forced ones only
    try:
        _, files = run_with_timeline(trainer, timeline=timeline)
    finally:
        if enabled:
            gc.enable()
    assert recording == [0, 0, 1, 1, 0, 0]  # the window: iterations 3-4
    assert sorted(files) == ['iteration_3.json.gz']
    events = files['iteration_3.json.gz']
    assert_nested_per_thread(events)
    collections = spans(events, 'gc')
    assert [e['name'] for e in collections] == ['gc (generation 2)'] * 2
    assert [e['dur'] / 1e6 for e in collections] == [tail_tests.GC] * 2
    for e in collections:
        assert e['args']['generation'] == 2
        assert e['args']['collected'] >= 1  # the sleeper, at least
        assert e['tid'] == e['pid']  # the training loop
        assert parent_of(e, spans(events, 'phase'))['name'] == 'optimizer'
    iterations = spans(events, 'iteration')
    for e, iteration in zip(collections, iterations):
        assert parent_of(e, iterations) is iteration
    # Inside the optimizer phase, not added to it.
    optimizer = [e['dur'] / 1e6 for e in spans(events, 'phase')
                 if e['name'] == 'optimizer']
    assert optimizer == [OPTIMIZER + tail_tests.GC] * 2


def test_collection_fitted_into_its_phase_and_window():
    # A phase switched inside a collection (rare): cut at the phase's end.
    # Collections not wholly in the window are left out.
    window = trace_events.Window(
        [(1, 0.0)], 3.0,
        [phases_module.Span(phases_module.FORWARD, 0.0, 1.0),
         phases_module.Span(phases_module.BACKWARD, 1.0, 3.0)],
        spans_module.Recording(),
        [phases_module.GcSpan(*gc_span) for gc_span in (
            (0, 5, 0.5, 1.5), (2, 1, 1.5, 2.0),
            (1, 0, -1.0, 0.5), (1, 0, 2.5, 3.5))])
    events = trace_events.window_events(window, 0, device=False)
    assert_nested_per_thread(events)
    collections = spans(events, 'gc')
    assert [(e['name'], e['ts'], e['dur'], e['args'])
            for e in collections] == [
        ('gc (generation 0)', 5e5, 5e5,
         {'generation': 0, 'collected': 5, 'fitted_ns': 500000000}),
        ('gc (generation 2)', 1.5e6, 5e5, {'generation': 2, 'collected': 1})]

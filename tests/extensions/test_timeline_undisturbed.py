"""Traced iterations are not disturbed by the package's own work."""

import datetime
import os

import pytest

from chainer_hookext import LinkMemory
from chainer_hookext import Timeline
from chainer_hookext.extensions import _timeline_recorder
from chainer_hookext.run import iteration_plan
from chainer_hookext.timing import pauses
from chainer_hookext.timing import phases
from chainer_hookext.timing import spans as spans_module
from chainer_hookext.timing import trace
from chainer_hookext.timing import trace_events
from tests.conftest import BACKWARD
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import OPTIMIZER
from tests.conftest import SLOW
from tests.conftest import make_slow_trainer
from tests.extensions.test_timeline import assert_nested_per_thread
from tests.extensions.test_timeline import spans

#: The links SlowModel calls per iteration: main, its predictor, l1, l2.
LINK_CALLS = 4
UPDATE = DATA + FORWARD + BACKWARD + OPTIMIZER


def run_both(still, tmp_path, order, monkeypatch, stop=14):
    # LinkMemory and Timeline at their defaults, triggered as every epoch
    # of 6 iterations; the Timeline's set-up takes SLOW seconds.
    start = _timeline_recorder.Recorder.start

    def slow_start(self, *args, **kwargs):
        still.sleep(SLOW)
        return start(self, *args, **kwargs)
    monkeypatch.setattr(_timeline_recorder.Recorder, 'start', slow_start)
    trainer = make_slow_trainer(still, tmp_path, stop=stop)
    made = {'memory': LinkMemory, 'timeline': Timeline}
    for name in order:
        trainer.extend(made[name](), trigger=(6, 'iteration'))
    trainer.run()
    folder = os.path.join(trainer.out, 'timeline')
    files = {name: trace.read(os.path.join(folder, name))
             for name in sorted(os.listdir(folder))}
    return trainer, files


@pytest.mark.parametrize('order', [('memory', 'timeline'),
                                   ('timeline', 'memory')])
def test_link_memory_and_timeline_pick_different_iterations(
        still, tmp_path, monkeypatch, order):
    trainer, files = run_both(still, tmp_path, order, monkeypatch)
    # Windows at the first iteration of epochs 2 and 3 (the last cut
    # short); LinkMemory measures the first of the run, then the first not
    # traced, nor right after a window, after each epoch's end.
    assert sorted(files) == ['iteration_13.json.gz', 'iteration_7.json.gz']
    plan = iteration_plan.IterationPlan.of(trainer)
    measured = {n for n in range(1, 15) if plan.measured(n)}
    assert measured == {1, 11}
    for events in [files['iteration_7.json.gz']]:
        assert_nested_per_thread(events)
        assert not [e for e in events if 'piece' in (e.get('args') or {})]
        # No work of the package's in a traced iteration: neither
        # LinkMemory's nor the Timeline's set-up (SLOW seconds).
        assert not [e for e in spans(events, 'extension')
                    if e['name'] in ('LinkMemory', 'Timeline')]
        iterations = spans(events, 'iteration')
        assert len(iterations) == 3
        # The update's phases, and the trainer's own slow extension every
        # other iteration.
        assert {e['dur'] for e in iterations} == {UPDATE * 1e6,
                                                  (UPDATE + SLOW) * 1e6}
        assert [e['dur'] for e in spans(events, 'phase')
                if e['name'] == 'data'] == [DATA * 1e6] * 3
        # Each link call one complete event, its args its own.
        forward = spans(events, 'link_forward')
        assert len(forward) == 3 * LINK_CALLS
        assert all(e['args'] == {'link': e['name']} for e in forward)
        for e in spans(events, 'link_backward'):
            assert e['args']['steps_ns'] <= e['dur'] * 1000 + 1


def test_outlier_traces_leave_the_measured_iterations_out(
        still, tmp_path):
    # Every judged iteration is an outlier (over 1 us); LinkMemory measures
    # 1, 9, 17 and 25: no outlier trace holds 25 (26's would, beside it).
    trainer = make_slow_trainer(still, tmp_path, stop=30)
    trainer.extend(LinkMemory(), trigger=(8, 'iteration'))
    trainer.extend(Timeline(outliers=datetime.timedelta(microseconds=1),
                            max_outliers=100),
                   trigger=lambda trainer: False)
    trainer.run()
    written = [os.path.basename(p)
               for p in trainer.get_extension('Timeline').written]
    assert written
    for name in written:
        events = trace.read(os.path.join(trainer.out, 'timeline', name))
        shown = {e['name'] for e in spans(events, 'iteration')}
        assert 'iteration 25' not in shown, name


class _Record:
    labels = None  # a step of nodes outside every link: '(outside)'


def test_a_span_holding_our_work_is_whole_its_args_its_own():
    # A pause (our work) inside a link's call, its backward and a phase:
    # each span is one event, around it; the pause is a span inside.
    links = spans_module.Recording()
    record = _Record()
    # The call ran 1.0 to 4.0 with a pause 2.0 to 3.0: its timer moved
    # its start to 2.0.  A backward step from 5.0 to 8.0, paused 6.0 to
    # 7.0, timed from 6.0.
    links.forward.append(spans_module.Span(record, 2.0, 4.0))
    links.backward.append(spans_module.Span(record, 6.0, 8.0))
    window = trace_events.Window(
        [(1, 0.0)], 10.0,
        [phases.Span(phases.FORWARD, 0.0, 5.0),
         phases.Span(phases.BACKWARD, 5.0, 10.0)], links, [],
        [pauses.Pause('LinkMemory', 2.0, 3.0),
         pauses.Pause('LinkMemory', 6.0, 7.0)])
    events = trace_events.window_events(window, 0, False)
    assert_nested_per_thread(events)
    assert not [e for e in events if 'piece' in (e.get('args') or {})]
    forward = spans(events, 'link_forward')
    assert [(e['ts'], e['dur']) for e in forward] == [(1e6, 3e6)]
    [backward] = spans(events, 'link_backward')
    assert (backward['ts'], backward['dur']) == (5e6, 3e6)
    assert backward['args']['steps_ns'] == 2 * 10 ** 9  # its own
    assert backward['args']['share'] == round(2 / 3, 4)
    assert [e['dur'] for e in spans(events, 'phase')] == [5e6, 5e6]
    assert [(e['name'], e['ts']) for e in spans(events, 'extension')] == [
        ('LinkMemory', 2e6), ('LinkMemory', 6e6)]


def test_plan_refuses_bad_windows():
    plan = iteration_plan.IterationPlan()
    with pytest.raises(ValueError, match=r'first=5, last=4'):
        plan.trace('Timeline', 5, 4)
    plan.trace('Timeline', 5, 6)
    plan.forget('Timeline')
    assert plan.measure(5)

"""Timeline on a real Trainer, with known delays on a still clock."""

import os

import chainer
import pytest
from chainer.training import extensions

from chainer_hookext import TimedLinks
from chainer_hookext import Timeline
from chainer_hookext.extensions._timeline import trace
from tests.conftest import BACKWARD
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import OPTIMIZER
from tests.conftest import SLOW
from tests.conftest import make_slow_trainer


UPDATE = DATA + FORWARD + BACKWARD + OPTIMIZER


def run_with_timeline(trainer, **kwargs):
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
    forward = spans(events, 'forward')
    assert [e['name'] for e in forward].count('main/predictor/l1') == 2
    per_iteration = timed.summary(by='name')['main']['elapsed_time'] / 8
    main = sum(e['dur'] for e in forward if e['name'] == 'main') / 1e6
    assert main == 2 * per_iteration == 2 * FORWARD
    backward = spans(events, 'backward')
    first = [e['name'] for e in backward][:4]
    assert first == ['main', 'main/predictor/l2', 'main/predictor',
                     'main/predictor/l1']
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
    inside = [e for e in spans(events, 'forward')
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
    with pytest.raises(ValueError, match=r"Timeline\(warmup='1'\)"):
        Timeline(warmup='1')
    with pytest.raises(ValueError, match=r"Timeline\(compress='yes'\)"):
        Timeline(compress='yes')


def test_gpu_link_spans_resolved_when_the_window_ends(
        still, tmp_path, monkeypatch):
    from chainer_hookext.link_hooks._timer import cuda_events

    resolved = []

    class FakeEvent(object):
        def __init__(self):
            self.seconds = still()

    def elapsed(start, stop):
        resolved.append(still())
        return stop.seconds - start.seconds

    monkeypatch.setattr(cuda_events, 'is_gpu', lambda link: True)
    monkeypatch.setattr(cuda_events, 'record_event', FakeEvent)
    monkeypatch.setattr(cuda_events, 'elapsed', elapsed)
    trainer = make_slow_trainer(still, tmp_path, stop=4)
    _, files = run_with_timeline(trainer, iterations=2)
    # Every event was resolved at once, when the window ended.
    assert resolved and set(resolved) == {resolved[0]}
    events = files['iteration_3.json.gz']
    assert_nested(events)
    main = [e['dur'] / 1e6 for e in spans(events, 'forward')
            if e['name'] == 'main']
    assert main == [FORWARD, FORWARD]

"""The one clock and the one CUDA event queue."""

import chainer.links as L

from chainer_hookext import TimerHook
from chainer_hookext.timing import clock as timing_clock
from chainer_hookext.timing import phases
from chainer_hookext.timing import records
from tests.conftest import MLP
from tests.conftest import TICK
from tests.conftest import data


def test_every_reader_reads_the_one_clock(clock):
    # The fixture replaces timing.clock.now only: the link calls and the
    # loop's phases both tick on it.
    hook = TimerHook()
    model = L.Classifier(MLP())
    x, t = data()
    with hook:
        model(x, t)
    # 4 links called, 2 reads each.
    assert hook.total_time() == 7 * TICK
    phase_clock = phases.PhaseClock()
    phase_clock.switch('data')
    phase_clock.switch('forward')
    assert phase_clock.totals == {'data': TICK}


class Event(object):

    def __init__(self, seconds):
        self.seconds = seconds


def test_event_queue_charges_forward_and_backward(monkeypatch):
    monkeypatch.setattr(timing_clock, 'elapsed',
                        lambda start, stop: stop.seconds - start.seconds)
    forward = records.CallRecord()
    stored = records.CallRecord()
    step = records.CallRecord()
    queue = timing_clock.EventQueue()
    queue.push(forward, Event(1.0), Event(1.5))
    queue.push(step, Event(2.0), Event(2.25), backward=True)
    step.charged = stored  # moved into the stored trees meanwhile
    queue.resolve()
    assert (forward.elapsed, forward.backward) == (0.5, 0.0)
    assert (step.elapsed, step.backward, stored.backward) == (0.0, 0.0, 0.25)
    assert queue.pending == []


def test_event_queue_resolves_the_oldest_half_when_full(monkeypatch):
    resolved = []
    monkeypatch.setattr(timing_clock, 'MAX_PENDING', 4)
    monkeypatch.setattr(timing_clock, 'elapsed',
                        lambda start, stop: resolved.append(start) or 1.0)
    record = records.CallRecord()
    queue = timing_clock.EventQueue()
    for i in range(3):
        queue.push(record, i, i)
    assert resolved == []
    queue.push(record, 3, 3)
    assert resolved == [0, 1] and len(queue.pending) == 2
    assert record.elapsed == 2.0


def test_event_queue_records_resolved_events_again(monkeypatch):
    recorded = []

    def record_event(event=None):
        event = Event(0.0) if event is None else event
        recorded.append(event)
        return event

    monkeypatch.setattr(timing_clock, 'record_event', record_event)
    monkeypatch.setattr(timing_clock, 'elapsed', lambda start, stop: 1.0)
    record = records.CallRecord()
    running = []
    queue = timing_clock.EventQueue(lambda: running)
    first = [queue.record() for _ in range(4)]
    queue.push(record, first[0], first[1])
    queue.push(record, first[1], first[2])  # a stop is the next start
    running.append(first[3])  # a running call's start, not pushed
    queue.resolve()
    assert record.elapsed == 2.0 and queue.created == 4
    assert sorted(map(id, queue.free)) == sorted(map(id, first[:3]))
    again = [queue.record() for _ in range(4)]
    assert queue.created == 5  # three reused, each once
    assert len({id(e) for e in again}) == 4
    assert all(id(e) != id(first[3]) for e in again[:3])


def test_event_queue_keeps_events_still_to_be_read(monkeypatch):
    monkeypatch.setattr(timing_clock, 'MAX_PENDING', 4)
    monkeypatch.setattr(timing_clock, 'elapsed', lambda start, stop: 1.0)
    record = records.CallRecord()
    events = [Event(float(i)) for i in range(5)]
    queue = timing_clock.EventQueue(lambda: [])
    for start, stop in zip(events, events[1:]):
        queue.push(record, start, stop)  # a chain: each stop starts the next
    # The oldest half resolved: its events, less the one the pending pairs
    # still start from.
    assert queue.free == events[:2]
    recording = timing_clock.EventQueue(lambda: None)  # a window records
    recording.push(record, events[0], events[1])
    recording.resolve()
    assert recording.free == [] and recording.pending == []

import pytest

from chainer_hookext.timing import clock as timing_clock


class FakeEvent(object):
    """A CUDA event stand-in recorded at the fake clock's time."""

    def __init__(self, seconds):
        self.seconds = seconds


@pytest.fixture
def fake_cuda(monkeypatch, clock):
    """Drives the CUDA-event code paths on the CPU with the fake clock.

    Returns the list of the ``(start, stop)`` pairs resolved so far.
    """
    resolved = []

    def elapsed(start, stop):
        resolved.append((start, stop))
        return stop.seconds - start.seconds

    monkeypatch.setattr(timing_clock, 'is_gpu', lambda link: True)

    def record_event(event=None):
        if event is None:
            return FakeEvent(timing_clock.now())
        event.seconds = timing_clock.now()  # recorded again
        return event

    monkeypatch.setattr(timing_clock, 'record_event', record_event)
    monkeypatch.setattr(timing_clock, 'elapsed', elapsed)
    return resolved

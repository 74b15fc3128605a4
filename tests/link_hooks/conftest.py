import pytest

from chainer_hookext.link_hooks import _cuda_timing
from chainer_hookext.link_hooks import _timer_stack


class FakeEvent(object):
    """A CUDA event stand-in recorded at the fake clock's time."""

    def __init__(self, seconds):
        self.seconds = seconds


@pytest.fixture
def fake_cuda(monkeypatch, clock):
    """Drives the CUDA-event code paths on the CPU with the fake clock.

    Each test module defines its own ``clock`` fixture (which clocks it
    fakes); the events are recorded at its time.  Returns the list of the
    ``(start, stop)`` pairs resolved so far.
    """
    resolved = []

    def elapsed(start, stop):
        resolved.append((start, stop))
        return stop.seconds - start.seconds

    monkeypatch.setattr(_cuda_timing, 'is_gpu', lambda link: True)
    monkeypatch.setattr(_cuda_timing, 'record_event',
                        lambda: FakeEvent(_timer_stack._perf_counter()))
    monkeypatch.setattr(_cuda_timing, 'elapsed', elapsed)
    return resolved

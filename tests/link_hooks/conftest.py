import pytest

from chainer_hookext.link_hooks._timer import call_stack
from chainer_hookext.link_hooks._timer import cuda_events


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

    monkeypatch.setattr(cuda_events, 'is_gpu', lambda link: True)
    monkeypatch.setattr(cuda_events, 'record_event',
                        lambda: FakeEvent(call_stack._perf_counter()))
    monkeypatch.setattr(cuda_events, 'elapsed', elapsed)
    return resolved

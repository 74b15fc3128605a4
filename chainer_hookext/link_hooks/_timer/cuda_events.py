"""CUDA events for :class:`~chainer_hookext.TimerHook`.

A link on a GPU is timed by recording a CUDA event on the current stream
when its forward starts and another when it ends; nothing waits for the
device while the model runs.  The hook keeps the pairs and asks
:func:`elapsed` for their time only when a summary is wanted (or when too
many pairs are waiting), by which time the device has usually passed both.

Tests replace these three functions with fakes to drive the GPU code path on
a machine without CUDA.
"""

from chainer.backends import cuda


def is_gpu(link):
    """Returns whether ``link`` lives on a CUDA device (CuPy arrays)."""
    return cuda.available and isinstance(link.device, cuda.GpuDevice)


def record_event():
    """Returns a new CUDA event recorded on the current stream."""
    event = cuda.Event()
    event.record()
    return event


def elapsed(start, stop):
    """Returns the seconds between two recorded events (waits for ``stop``).
    """
    stop.synchronize()
    return cuda.cupy.cuda.get_elapsed_time(start, stop) / 1000

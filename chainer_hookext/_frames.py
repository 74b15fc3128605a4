"""What still runs, read from the thread's frames (slow paths only: a walk
costs microseconds): a call left by an exception gets no postprocess
(docs/internals.md, "Node tagging").
"""

import itertools
import sys

from chainer_hookext import _chainer


_LINK_CALL = _chainer.LINK_CALL_CODE
_STEP = _chainer.BACKWARD_STEP_CODE


def _outward(frame):
    # ``frame``, then each frame that called the one before.
    while frame is not None:
        yield frame
        frame = frame.f_back


def still_running(keys, skip_current):
    """The depth of a stack of calls (``keys``: links or link classes,
    outermost first) to keep; ``skip_current`` from a
    ``forward_preprocess``: the innermost call is starting."""
    links = [f.f_locals.get('self') for f in _outward(sys._getframe(1))
             if f.f_code is _LINK_CALL]  # innermost first
    if skip_current and links:
        del links[0]
    live = reversed(links)
    keep = 0
    for key in keys:
        if not any(key is link or key is type(link) for link in live):
            break
        keep += 1
    return keep


def calling_link():
    """The link whose call encloses the innermost link call, or ``None``."""
    calls = (f for f in _outward(sys._getframe(1)) if f.f_code is _LINK_CALL)
    next(calls, None)
    outer = next(calls, None)
    return None if outer is None else outer.f_locals.get('self')


def calling_code():
    """The code that made the innermost link call (from three frames up);
    a plain loop, no generator: it runs per call of a link in a loop."""
    frame = sys._getframe(3)
    while frame is not None and frame.f_code is not _LINK_CALL:
        frame = frame.f_back
    return None if frame is None else frame.f_back.f_code


def running_step():
    """The node of the innermost running backward step, or ``None`` (from a
    step's own hooks: the enclosing one's, ``F.forget``'s)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _STEP:
            return frame.f_locals.get('func')
        frame = frame.f_back
    return None


def trainer_run(trainer, depth, or_above=False):
    """The frame ``depth`` above the caller (or the next, ``or_above``) if
    it runs ``trainer.run``; else ``None``."""
    frames = _outward(sys._getframe(depth + 1))
    return next((f for f in itertools.islice(frames, 2 if or_above else 1)
                 if f.f_code.co_name == 'run'
                 and f.f_locals.get('self') is trainer), None)


def is_running(frame):
    """Whether ``frame`` is on the calling thread's stack."""
    return any(f is frame for f in _outward(sys._getframe(1)))

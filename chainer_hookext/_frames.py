"""What still runs, read from the thread's frames (slow paths only: a walk
costs microseconds): a call left by an exception gets no postprocess
(docs/internals.md, "Node tagging").
"""

import sys

from chainer_hookext import _chainer


_LINK_CALL = _chainer.LINK_CALL_CODE
_STEP = _chainer.BACKWARD_STEP_CODE


def still_running(keys, skip_current):
    """The depth of a stack of calls (``keys``: links or link classes,
    outermost first) to keep; ``skip_current`` from a
    ``forward_preprocess``: the innermost call is starting."""
    links = []  # innermost first
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _LINK_CALL:
            links.append(frame.f_locals.get('self'))
        frame = frame.f_back
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
    frame = sys._getframe(1)
    seen = False
    while frame is not None:
        if frame.f_code is _LINK_CALL:
            if seen:
                return frame.f_locals.get('self')
            seen = True
        frame = frame.f_back
    return None


def calling_code():
    """The code that made the innermost link call (from three frames up)."""
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
    frame = sys._getframe(depth + 1)
    for _ in range(2 if or_above else 1):
        if frame is None:
            return None
        if frame.f_code.co_name == 'run' and (
                frame.f_locals.get('self') is trainer):
            return frame
        frame = frame.f_back
    return None


def is_running(frame):
    """Whether ``frame`` is on the calling thread's stack."""
    current = sys._getframe(1)
    while current is not None:
        if current is frame:
            return True
        current = current.f_back
    return False

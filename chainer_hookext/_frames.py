"""What still runs, read from the calling thread's frames (slow paths only:
a frame walk costs microseconds).

Chainer 7.8.1 has no ``try`` / ``finally`` in ``Link.__call__`` or
``_backprop_to_all``: a call left by an exception gets no postprocess, so
the frames tell which calls still run (docs/internals.md, "Node tagging").
"""

import sys

from chainer_hookext import _chainer


_LINK_CALL = _chainer.LINK_CALL_CODE
_STEP = _chainer.BACKWARD_STEP_CODE


def still_running(keys, skip_current):
    """Returns the depth of a stack of calls to keep: the calls above it
    ended (a forward raised).

    Args:
        keys (list): The link (or link class) of each call, outermost first.
        skip_current (bool): Asked from a ``forward_preprocess``: the
            innermost ``Link.__call__`` is the call starting.
    """
    links = []  # of the Link.__call__ frames, innermost first
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
    """Returns the link whose call encloses the innermost link call, or
    ``None``."""
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
    """Returns the code object that made the innermost link call (asked
    from a helper of a hook's method: three frames up, or above)."""
    frame = sys._getframe(3)
    while frame is not None and frame.f_code is not _LINK_CALL:
        frame = frame.f_back
    return None if frame is None else frame.f_back.f_code


def running_step():
    """Returns the function node of the innermost running backward step,
    or ``None``.  A step's hooks run outside its own ``backprop_step``:
    from its ``backward_preprocess`` this is the enclosing step
    (``F.forget``'s)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _STEP:
            return frame.f_locals.get('func')
        frame = frame.f_back
    return None


def trainer_run(trainer, depth, or_above=False):
    """Returns the frame ``depth`` above the caller (or, with ``or_above``,
    the one above it) if it runs ``trainer.run``; else ``None``."""
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
    """Returns whether ``frame`` is on the calling thread's stack."""
    current = sys._getframe(1)
    while current is not None:
        if current is frame:
            return True
        current = current.f_back
    return False

"""What still runs, read from Python frames: link calls, backward steps,
``Trainer.run``.

Chainer calls a link hook's ``forward_postprocess`` and a function hook's
``backward_postprocess`` only when the call returns: in Chainer 7.8.1,
``Link.__call__`` (``chainer/link.py``) and ``_backprop_to_all``
(``chainer/_backprop.py``) have no ``try`` / ``finally`` around
``forward`` and ``backprop_step``.  A call left by an exception is seen
only by its missing postprocess, so the timer's slow paths read the frames
of the calling thread to tell which calls still run.  Likewise
:class:`~chainer_hookext.run.training_loop.TrainingLoop` tells
``Trainer.run``'s call of the stop trigger from others, and a loop left
running from a running one.  Never on the hot path: a frame walk costs
microseconds.
"""

import sys

from chainer_hookext import _chainer


_LINK_CALL = _chainer.LINK_CALL_CODE
_STEP = _chainer.BACKWARD_STEP_CODE


def running_links(skip_current):
    """Returns the links whose ``Link.__call__`` runs, outermost first.

    Args:
        skip_current (bool): Leave out the innermost, the call whose hook
            asks.
    """
    links = []
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _LINK_CALL:
            links.append(frame.f_locals.get('self'))
        frame = frame.f_back
    if skip_current and links:
        del links[0]
    links.reverse()
    return links


def still_running(keys, skip_current):
    """Returns how many of the calls keyed by ``keys`` still run.

    The one recovery from a forward that raised (Chainer then calls no
    ``forward_postprocess``): the calls on a stack, outermost first, are
    compared with the ``Link.__call__`` frames still running.

    Args:
        keys (list): The link of each call on the stack, outermost first
            (or the link's class, for a call keyed by class).
        skip_current (bool): Asked from a ``forward_preprocess``: the
            innermost ``Link.__call__`` is the call starting.

    Returns:
        int: The depth of the stack to keep; the calls above it ended.
    """
    live = iter(running_links(skip_current))
    keep = 0
    for key in keys:
        if not any(key is link or key is type(link) for link in live):
            break
        keep += 1
    return keep


def calling_link():
    """Returns the link whose call encloses the innermost link call.

    ``None`` when the innermost call is an outermost one.
    """
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
    """Returns the code object that made the innermost link call.

    Asked from a helper of a hook's method, which ``Link.__call__`` calls:
    that call is three frames up (looked for above when it is not).
    """
    frame = sys._getframe(3)
    while frame is not None and frame.f_code is not _LINK_CALL:
        frame = frame.f_back
    return None if frame is None else frame.f_back.f_code


def running_step():
    """Returns the function node of the innermost running backward step.

    ``None`` outside every step.  A step's hooks run outside its own
    ``backprop_step``: from a step's ``backward_preprocess`` this is the
    step that encloses it (``F.forget`` runs a backward inside its step).
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _STEP:
            return frame.f_locals.get('func')
        frame = frame.f_back
    return None


def trainer_run(trainer, depth, or_above=False):
    """Returns the frame ``depth`` above the caller if it runs ``Trainer.run``
    for ``trainer`` (or, with ``or_above``, the one above it); else ``None``.
    """
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

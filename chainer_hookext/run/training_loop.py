"""The trainer's training loop: callbacks at its start, iterations and end,
standing in for ``trainer.stop_trigger`` and ``trainer.reporter.scope``
(docs/internals.md, "The lifecycle of `LinkHookExtension`").
"""

import collections
import threading
import warnings
import weakref

from chainer_hookext import _copies
from chainer_hookext import _frames
from chainer_hookext.run import iteration_parts


_WAITING = 'waiting'
_RUNNING = 'running'
_ENDED = 'ended'
_MISSING = object()
_Callbacks = collections.namedtuple(
    '_Callbacks', ('enter', 'end', 'iteration', 'check'))

# {trainer: weakref to its waiting TrainingLoop}; each thread's running ones.
_waiting = weakref.WeakKeyDictionary()
_local = threading.local()


class TrainingLoop:
    """Stands in for ``trainer.stop_trigger`` until the loop ends, for every
    callback of a run (use :meth:`install`)."""

    def __init__(self, trainer):
        trigger = trainer.stop_trigger
        while isinstance(trigger, TrainingLoop) and trigger._state is _ENDED:
            trigger = trigger._trigger  # put back by another's replacement
        self._trainer = weakref.ref(trainer)
        self._trigger = trigger
        self._callbacks = []
        self._state = _WAITING
        self._run_frame = None
        self._reporter = None
        self._reporter_scope = None  # the reporter's scope under ours
        self._saved_scope = _MISSING
        self._scope = _ReporterScope(self)  # one object, to compare
        self.parts = iteration_parts.IterationParts(trainer)
        self._scope_depth = 0
        trainer.stop_trigger = self
        _waiting[trainer] = weakref.ref(self)

    @property
    def trainer(self):
        return self._trainer()

    @property
    def trigger(self):
        return self._trigger

    @property
    def waiting(self):
        return self._state is _WAITING

    @classmethod
    def install(cls, trainer, enter, end=None, iteration=None, check=None):
        """Calls ``enter()`` when ``trainer.run`` enters its loop (inside
        its ``try``), ``end()`` when it ends, ``iteration(trainer)`` at each
        iteration's start, ``check()`` before each stop trigger call (all
        but ``enter`` optional).  Returns the loop, for :meth:`discard`.
        """
        end_loops_left_running()
        entry = _waiting_for(trainer) or cls(trainer)
        if all(c.enter != enter for c in entry._callbacks):
            entry._callbacks.append(_Callbacks(enter, end, iteration, check))
        return entry

    def discard(self, enter):
        """Forgets ``enter``'s callbacks; closes when none is left."""
        self._callbacks = [c for c in self._callbacks if c.enter != enter]
        if not self._callbacks:
            self._close()

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        try:  # not self.__dict__: see _copies.own_attribute
            trigger = object.__getattribute__(self, '_trigger')
        except AttributeError:
            raise AttributeError(name) from None
        return getattr(trigger, name)

    def __reduce__(self):
        # A copy holds the trigger in stop_trigger, and an ended
        # TrainingLoop forwarding to it where the package refers to this.
        trainer = self.trainer
        if trainer is None or getattr(trainer, 'stop_trigger', None) is not (
                self):
            return _ended, (self._trigger,)
        return _copies.put_back, (trainer, self._trigger, _ended(
            self._trigger))

    def __call__(self, trainer):
        state = self._state
        if state is _WAITING:
            frame = self._run_frame_calling(trainer)
            if frame is None:
                return self._trigger(trainer)
            self._enter(frame)
        elif state is _ENDED:
            return self._trigger(trainer)
        self.parts.iteration_ended()
        try:
            if state is _WAITING:
                self._run_enter_callbacks()
            for c in self._callbacks:
                if c.check is not None:
                    c.check()
            stop = self._trigger(trainer)
        except Exception:
            raise
        except BaseException as e:
            self._end_on(e)
            raise
        if stop:
            self.end()
        else:
            for c in self._callbacks:
                if c.iteration is not None:
                    c.iteration(trainer)
            if self._state is _RUNNING:
                self.parts.update_started()
        return stop

    def end(self):
        """Ends a running loop and runs every end callback."""
        if self._state is not _RUNNING:
            return
        callbacks = [c.end for c in self._callbacks if c.end is not None]
        self._callbacks = []
        self._close()
        call_all(callbacks)

    def _run_enter_callbacks(self):
        callbacks = self._callbacks
        self._callbacks = [
            c for c in callbacks
            if any(f is not None for f in (c.end, c.iteration, c.check))]
        if not self._callbacks:
            self._close()
        for c in callbacks:
            c.enter()

    def _run_frame_calling(self, trainer):
        # Trainer.run's frame if it made this call (through one replacement).
        if trainer is not self.trainer:
            return None
        return _frames.trainer_run(
            trainer, 2,
            or_above=getattr(trainer, 'stop_trigger', None) is not self)

    def _enter(self, frame):
        self._state = _RUNNING
        self._run_frame = frame
        self._stop_standing_in()
        reporter = self._reporter = self.trainer.reporter
        self._saved_scope = _copies.own_attribute(
            reporter, 'scope', _MISSING)
        self._reporter_scope = reporter.scope
        reporter.scope = self._scope
        _running().append(self)

    def _end_on(self, exc):
        # No on_error sees ``exc``: a callback's error is only warned of.
        try:
            self.end()
        except Exception as e:
            warnings.warn(f'Error while ending the training loop on '
                          f'{exc!r}: {e!r}', RuntimeWarning)

    def _close(self):
        self._state = _ENDED
        self._run_frame = None
        self.parts.loop_ended()
        self._stop_standing_in()
        running = _running()
        if self in running:
            running.remove(self)
        reporter, self._reporter = self._reporter, None
        if reporter is not None and _copies.own_attribute(
                reporter, 'scope') is self._scope:
            if self._saved_scope is _MISSING:
                del reporter.scope
            else:
                reporter.scope = self._saved_scope

    def _stop_standing_in(self):
        trainer = self.trainer
        if trainer is None:
            return
        if _waiting_for(trainer) is self:
            del _waiting[trainer]
        if getattr(trainer, 'stop_trigger', None) is self:
            trainer.stop_trigger = self._trigger


class _ReporterScope:
    # trainer.reporter.scope while the loop runs; a copy holds the original.
    __slots__ = ('entry',)

    def __init__(self, entry):
        self.entry = entry

    def __call__(self, observation):
        entry = self.entry
        return _IterationScope(entry, entry._reporter_scope(observation))

    def __reduce__(self):
        entry = self.entry
        if entry._saved_scope is not _MISSING:
            return _copies.same, (entry._saved_scope,)
        return _copies.put_back, (
            entry._reporter, _copies.LEAVE_OUT, _copies.Placeholder())


def _ended(trigger):
    entry = TrainingLoop.__new__(TrainingLoop)
    vars(entry).update(
        _trainer=lambda: None, _trigger=trigger, _callbacks=[],
        _state=_ENDED, _run_frame=None, _reporter=None, _reporter_scope=None,
        _saved_scope=_MISSING, _scope=None, _scope_depth=0,
        parts=iteration_parts.IterationParts(None))
    return entry


class _IterationScope:
    # The reporter's scope of one iteration, seeing what leaves it.
    __slots__ = ('entry', 'scope')

    def __init__(self, entry, scope):
        self.entry = entry
        self.scope = scope

    def __enter__(self):
        value = self.scope.__enter__()
        self.entry._scope_depth += 1
        return value

    def __exit__(self, exc_type, exc, tb):
        entry = self.entry
        entry._scope_depth -= 1
        if not entry._scope_depth:  # the iteration's, not one inside it
            entry.parts.iteration_ended()
        suppressed = self.scope.__exit__(exc_type, exc, tb)
        if exc_type is not None and not suppressed and not issubclass(
                exc_type, Exception):
            self.entry._end_on(exc)
        return suppressed


def call_all(functions):
    """Calls each of ``functions``, then raises the first error."""
    error = None
    for function in functions:
        try:
            function()
        except BaseException as e:
            error = e if error is None else error
    if error is not None:
        raise error


def _waiting_for(trainer):
    ref = _waiting.get(trainer)
    return None if ref is None else ref()


def _running():
    return _local.__dict__.setdefault('running', [])


def end_loops_left_running():
    """Ends, with a warning, the thread's loops whose ``Trainer.run``
    returned unseen (docs/internals.md, "The lifecycle of
    `LinkHookExtension`")."""
    for entry in list(_running()):
        if _frames.is_running(entry._run_frame):
            continue
        warnings.warn(
            'Removing the hooks left registered by the training loop of '
            f"{entry.trainer!r}, which ended without its extensions' "
            "finalize (an interrupt, then an extension's finalize raised).",
            RuntimeWarning)
        try:
            entry.end()
        except Exception as e:
            warnings.warn(f'Error while ending that loop: {e!r}',
                          RuntimeWarning)

"""Callbacks run when a trainer's training loop starts and when it ends.

``Trainer.run`` (``chainer/training/trainer.py``) calls every extension's
``initialize``, then the extensions called before training, *outside* its
``try``/``finally``: what is acquired there is never released when a later
one raises.  Inside the ``try``, ``on_error`` is skipped for exceptions that
are not ``Exception`` (``KeyboardInterrupt``), and the ``finally`` calls the
extensions' ``finalize`` one after the other, unguarded: one that raises
skips the rest.  :class:`LoopEntry` sees the loop itself instead.

**The start.**  ``run`` binds ``stop_trigger = self.stop_trigger`` after
every ``initialize`` and calls ``stop_trigger(self)`` first thing inside the
``try``.  A :class:`LoopEntry` stands in for ``trainer.stop_trigger`` (an
instance attribute; every other attribute is the trigger's, e.g.
``get_training_length``).  On its first call made by ``run`` (the caller's
frame runs ``run`` for this trainer; or the caller's caller, when another
extension put its own stand-in over this one later, as ``TimedLoop`` does)
it puts the trainer's trigger back and runs the enter callbacks.  Calls made
before, by an extension called before training, are forwarded only.  The
updater is not touched: a warm-up ``updater.update()`` before training, or
an extension wrapping ``updater.update``, changes nothing.

**The end**, every way out of the loop, before any ``finalize``:

1. the stop trigger returns ``True``;
2. an exception that is not an ``Exception`` leaves an iteration: during the
   loop ``trainer.reporter.scope``, which ``run`` enters around each
   iteration's update and extensions, is a stand-in that sees it; or leaves
   the stop trigger;
3. an ``Exception`` reaches each extension's ``on_error`` (Chainer calls
   them all), so its owner releases there.

:meth:`LoopEntry.end` takes the stand-ins off and runs every end callback,
each even when an earlier one raises.  Owners call it from ``finalize`` too.
What is left: an interrupt landing in ``run``'s own code between two
iterations when, besides, an earlier ``finalize`` raises.  The next
:meth:`LoopEntry.install` in the thread (the next ``initialize``) ends such
an orphaned loop, with a ``RuntimeWarning``: its ``run`` frame is no longer
on the stack.
"""

import collections
import sys
import threading
import warnings
import weakref


_WAITING = 'waiting'
_RUNNING = 'running'
_ENDED = 'ended'
_MISSING = object()
#: What an owner asked for (see :meth:`LoopEntry.install`).
_Callbacks = collections.namedtuple(
    '_Callbacks', ('enter', 'end', 'iteration', 'check'))

# {trainer: weakref to the LoopEntry waiting for its loop}, weak both ways
# (the trainer holds its stand-in); each thread's running ones.
_waiting = weakref.WeakKeyDictionary()
_local = threading.local()


class LoopEntry(object):
    """Stands in for ``trainer.stop_trigger`` until the loop ends.

    Use :meth:`install`; one object serves every callback of a trainer's run.
    """

    def __init__(self, trainer):
        trigger = trainer.stop_trigger
        while isinstance(trigger, LoopEntry) and trigger._state is _ENDED:
            trigger = trigger._trigger  # put back by another's stand-in
        self._trainer = weakref.ref(trainer)
        self._trigger = trigger
        self._callbacks = []  # [_Callbacks]
        self._state = _WAITING
        self._run_frame = None
        self._reporter = None
        self._reporter_scope = None  # the reporter's scope under ours
        self._saved_scope = _MISSING
        self._scope = self._iteration  # one bound method, to compare
        trainer.stop_trigger = self
        _waiting[trainer] = weakref.ref(self)

    @property
    def trainer(self):
        """The trainer whose loop this object watches."""
        return self._trainer()

    @property
    def trigger(self):
        """The stop trigger this object stands in for."""
        return self._trigger

    @property
    def waiting(self):
        """Whether the loop has not started yet."""
        return self._state is _WAITING

    @classmethod
    def install(cls, trainer, enter, end=None, iteration=None, check=None):
        """Arranges for ``enter()`` and ``end()`` at the loop's two ends.

        Ends orphaned loops of the thread first (see the module).

        Args:
            trainer (~chainer.training.Trainer): The trainer to watch.
            enter (callable): Called with no argument when ``trainer.run``
                enters its loop, inside its ``try``.
            end (callable): Called with no argument when the loop ends, or
                ``None``.
            iteration (callable): Called with the trainer at each
                iteration's start (the stop trigger said go on), or
                ``None``.  Extensions that time the loop
                (``TimedLoop``, ``Timeline``) see the iterations here, so
                that no second stand-in is stacked over this one.
            check (callable): Called with no argument before each call of
                the stop trigger in the loop, or ``None``.

        Returns:
            LoopEntry: The object to pass ``enter`` to :meth:`discard`.
        """
        end_orphans()
        entry = _waiting_for(trainer)
        if entry is None:
            entry = cls(trainer)
        if all(c.enter != enter for c in entry._callbacks):
            entry._callbacks.append(_Callbacks(enter, end, iteration, check))
        return entry

    def discard(self, enter):
        """Forgets ``enter`` and its end; takes the stand-ins off when no
        callback is left."""
        self._callbacks = [c for c in self._callbacks if c.enter != enter]
        if not self._callbacks:
            self._close()

    def __getattr__(self, name):
        # Only for names this object lacks: the trigger's.
        trigger = self.__dict__.get('_trigger', _MISSING)
        if name.startswith('__') or trigger is _MISSING:
            raise AttributeError(name)
        return getattr(trigger, name)

    def __call__(self, trainer):
        state = self._state
        if state is _WAITING:
            frame = self._run_frame_calling(trainer)
            if frame is None:
                return self._trigger(trainer)
            self._enter(frame)
        elif state is _ENDED:
            return self._trigger(trainer)
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
        return stop

    def end(self):
        """Ends the loop: takes the stand-ins off, runs each end callback.

        Every callback runs once, even when an earlier one raises; the first
        error is raised after all have run.  Does nothing unless the loop is
        running.
        """
        if self._state is not _RUNNING:
            return
        callbacks = [c.end for c in self._callbacks if c.end is not None]
        self._callbacks = []
        self._close()
        error = None
        for end in callbacks:
            try:
                end()
            except BaseException as e:
                error = e if error is None else error
        if error is not None:
            raise error

    def _run_enter_callbacks(self):
        # Only the callbacks with an end are kept: the others are done.
        callbacks = self._callbacks
        self._callbacks = [
            c for c in callbacks
            if any(f is not None for f in (c.end, c.iteration, c.check))]
        if not self._callbacks:
            self._close()
        for c in callbacks:
            c.enter()

    def _run_frame_calling(self, trainer):
        # Trainer.run's frame if it made this call, through one stand-in at
        # most; sys._getframe(2) is the caller of __call__.
        if trainer is not self.trainer:
            return None
        frame = sys._getframe(2)
        if _is_run(frame, trainer):
            return frame
        if vars(trainer).get('stop_trigger') is not self:
            frame = frame.f_back
            if frame is not None and _is_run(frame, trainer):
                return frame
        return None

    def _enter(self, frame):
        self._state = _RUNNING
        self._run_frame = frame
        trainer = self.trainer
        if _waiting_for(trainer) is self:
            del _waiting[trainer]
        self._put_trigger_back()
        reporter = self._reporter = trainer.reporter
        self._saved_scope = vars(reporter).get('scope', _MISSING)
        self._reporter_scope = reporter.scope
        reporter.scope = self._scope
        _running().append(self)

    def _iteration(self, observation):
        # trainer.reporter.scope while the loop runs.
        return _Iteration(self, self._reporter_scope(observation))

    def _end_on(self, exc):
        # The loop ends with ``exc``, which no on_error sees: end it, and
        # warn of a callback's error so that ``exc`` stays the one raised.
        try:
            self.end()
        except Exception as e:
            warnings.warn('Error while ending the training loop on {!r}: '
                          '{!r}'.format(exc, e), RuntimeWarning)

    def _close(self):
        self._state = _ENDED
        self._run_frame = None
        trainer = self.trainer
        if trainer is not None and _waiting_for(trainer) is self:
            del _waiting[trainer]
        running = _running()
        if self in running:
            running.remove(self)
        self._put_trigger_back()
        reporter, self._reporter = self._reporter, None
        if reporter is not None and vars(reporter).get('scope') is (
                self._scope):
            if self._saved_scope is _MISSING:
                del vars(reporter)['scope']
            else:
                reporter.scope = self._saved_scope

    def _put_trigger_back(self):
        trainer = self.trainer
        if trainer is not None and vars(trainer).get('stop_trigger') is self:
            trainer.stop_trigger = self._trigger


class _Iteration(object):
    # The reporter's scope of one iteration, seeing what leaves it.

    __slots__ = ('entry', 'scope')

    def __init__(self, entry, scope):
        self.entry = entry
        self.scope = scope

    def __enter__(self):
        return self.scope.__enter__()

    def __exit__(self, exc_type, exc, tb):
        suppressed = self.scope.__exit__(exc_type, exc, tb)
        if exc_type is not None and not suppressed and not issubclass(
                exc_type, Exception):
            self.entry._end_on(exc)
        return suppressed


def _is_run(frame, trainer):
    # Whether ``frame`` runs Trainer.run for ``trainer``.
    return (frame.f_code.co_name == 'run'
            and frame.f_locals.get('self') is trainer)


def _waiting_for(trainer):
    ref = _waiting.get(trainer)
    return None if ref is None else ref()


def _running():
    # The thread's running loops, for end_orphans.
    running = getattr(_local, 'running', None)
    if running is None:
        running = _local.running = []
    return running


def end_orphans():
    """Ends the thread's loops whose ``Trainer.run`` has returned.

    Such a loop ended without anything of this module seeing it (see the
    module); its end callbacks run now, with a ``RuntimeWarning``.
    """
    running = _running()
    if not running:
        return
    stack = []
    frame = sys._getframe(1)
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    for entry in list(running):
        if any(f is entry._run_frame for f in stack):
            continue
        warnings.warn(
            'Removing the hooks left registered by the training loop of {!r}, '
            'which ended without its extensions\' finalize (an interrupt, '
            'then an extension\'s finalize raised).'.format(entry.trainer),
            RuntimeWarning)
        try:
            entry.end()
        except Exception as e:
            warnings.warn('Error while ending that loop: {!r}'.format(e),
                          RuntimeWarning)

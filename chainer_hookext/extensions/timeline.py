"""The trainer extension writing Perfetto traces of chosen iterations and
of outliers (docs/timing.md, "`Timeline`: a trace of chosen iterations").
"""

import collections
import os
import time
import warnings

import numpy
from chainer.training import extension

from chainer_hookext import _checks
from chainer_hookext import _state
from chainer_hookext.extensions import _timeline_outliers
from chainer_hookext.extensions import _timeline_recorder
from chainer_hookext.link_hooks import timer
from chainer_hookext.memory import timeline as memory_timeline
from chainer_hookext.report import gather
from chainer_hookext.report import link_names
from chainer_hookext.run import iteration_plan
from chainer_hookext.run import loop_phases
from chainer_hookext.timing import phases
from chainer_hookext.timing import trace
from chainer_hookext.timing import trace_events


class Timeline(loop_phases.LoopExtension):
    """Trainer extension writing a trace of chosen training iterations.

    At each trigger, the next ``iterations`` training iterations (after
    ``warmup`` more) are written to
    ``<trainer.out>/timeline/iteration_<N>.json.gz`` for Perfetto
    (docs/timing.md, "`Timeline`: a trace of chosen iterations").

    Args:
        iterations (int): Iterations per window.
        warmup (int): Iterations skipped after the trigger fires.
        validation (bool): Also record the calls inside ``Evaluator``.
        compress (bool): Write gzip (``.json.gz``); ``False``: ``.json``.
        comm (chainermn.CommunicatorBase): Rank 0 writes every rank's
            window in one file; without it each rank writes its own.
        outliers: Also write each slow iteration to
            ``outlier_iteration_<N>.json.gz``: ``True`` (3 times the
            median), a factor above 1, or a ``datetime.timedelta``; ``None``
            (default): off (docs/timing.md, "Outlier traces").
        max_outliers (int): Outlier traces written at most in a run.
        functions (bool): Also a span per function node (host clock only).
        memory (bool): Also counter tracks of the bytes alive
            (docs/memory.md, "Memory over the iteration").

    Attributes:
        written (list of str): The files this extension wrote, in order.

    .. admonition:: Example

        >>> from chainer_hookext import Timeline
        >>> trainer.extend(Timeline(iterations=3), trigger=(1, 'epoch'))

        Also the iterations with a part slower than 5 times its median:

        >>> timeline = Timeline(iterations=3, outliers=5.0)
        >>> timeline.outliers, timeline.max_outliers
        (5.0, 10)
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_READER
    default_name = 'Timeline'

    def __init__(self, iterations=3, *, warmup=0, validation=False,
                 compress=True, comm=None, outliers=None, max_outliers=10,
                 functions=False, memory=False):
        super().__init__()
        self.iterations = _checks.check_int(
            'Timeline', 'iterations', iterations, 1)
        self.warmup = _checks.check_int('Timeline', 'warmup', warmup, 0)
        self.validation = _checks.check_flag(
            'Timeline', 'validation', validation)
        self.compress = _checks.check_flag('Timeline', 'compress', compress)
        if comm is not None:
            gather.check_comm('Timeline', comm)
        self.comm = comm
        self.outliers = _timeline_outliers.check(outliers)
        self.max_outliers = _checks.check_int(
            'Timeline', 'max_outliers', max_outliers, 1)
        self.functions = _checks.check_flag(
            'Timeline', 'functions', functions)
        self.memory = _checks.check_flag('Timeline', 'memory', memory)
        self._memory = None  # the window's MemoryTimeline
        self._next_window = None  # first iteration of the scheduled window
        self._timer = timer.TimerHook(name='Timeline', backward=True,
                                      functions=self.functions)
        self._recorder = _timeline_recorder.Recorder(self._timer)
        self._plan = None
        self._discard()  # no window, no outlier
        self._unix_start = None
        self._outliers = None if self.outliers is None else (
            _timeline_outliers.OutlierRule(self.outliers, self.max_outliers))
        self._own_phase = None
        self._loaded = False  # a snapshot loaded since the last run
        self._failed = False
        self.written = []

    def initialize(self, trainer):
        self._discard()
        _checks.check_one_per_trainer(
            trainer, self, 'write the same files', 'use one Timeline, with a '
            'trigger that fires at every window wanted')
        folder = os.path.join(trainer.out, 'timeline')
        try:
            os.makedirs(folder, exist_ok=True)
            if not os.access(folder, os.W_OK | os.X_OK):
                raise PermissionError('not writable')
        except OSError as e:
            raise ValueError(
                f'Timeline cannot write its traces to {folder!r}: {e}. Give '
                'the trainer an `out` folder it can write, with no file '
                'named `timeline` in it.') from None
        if not self._loaded:  # a reused Timeline: only this run's windows
            self._next_window = None
            if self._outliers is not None:
                self._outliers.reset()
        if self._outliers is not None:
            self._outliers.warned = False
        self._loaded = False
        self._failed = False
        self._own_phase = phases.ExtensionPhase(
            self.name or self.default_name)
        self._plan = iteration_plan.IterationPlan.of(trainer)
        if self._next_window is not None:
            self._plan_window(self._next_window)
        super().initialize(trainer)

    def __call__(self, trainer):
        if self._window is None and self._next_window is None:
            self._next_window = trainer.updater.iteration + 1 + self.warmup
            self._plan_window(self._next_window)

    def _plan_window(self, first):
        self._plan.trace(self, first, first + self.iterations - 1)

    def iteration_ended(self, trainer):
        if self._outliers is None:
            return
        # Before any reader's own work here: the clock's totals are exact.
        start = self._loop.iteration_start
        own = self._clock.totals.get(self._own_phase, 0.0)
        started = self._started
        self._started = _timeline_outliers.Started(
            trainer.updater.iteration + 1, start, own)
        if started is not None and self._recorder.running:
            self._ended = _timeline_outliers.ended(
                started, start, self._recorder.cut(), own)

    def iteration_started(self, trainer):
        # No clock read nor own work here, inside a traced iteration.
        number = trainer.updater.iteration + 1
        start = self._loop.iteration_start
        ended, self._ended = self._ended, None
        window = self._window
        if window is not None:
            if ended is not None:
                window.pieces.append(ended.piece)
            if number < window.first + self.iterations:
                window.starts.append((number, start))
            else:
                self._end_window(number, start)
        if ended is not None:
            self._judge(ended)
        first = self._next_window
        if self._window is not None or first is None or number < first:
            return
        self._next_window = None
        if number >= first + self.iterations:
            warnings.warn(
                f'Timeline: the window of iterations {first}-'
                f'{first + self.iterations - 1} was scheduled before the '
                'snapshot this run resumed from, and has passed.',
                RuntimeWarning)
            return
        self._open_window(trainer, first, number, start)

    def iteration_ending(self, trainer):
        # Before the stop trigger, the clock in ``other``, which no trace
        # draws.
        following = trainer.updater.iteration + 1
        first = self._next_window
        if self.memory:
            self._memory_ended(trainer, following)
        try:
            self._iteration_ending(trainer, following, first)
        finally:
            if self.memory:
                self._memory_started(trainer, following)

    def _in_window(self, following):
        window, first = self._window, self._next_window
        return (window is not None
                and following < window.first + self.iterations) or (
            first is not None and first <= following < first + self.iterations)

    def _memory_ended(self, trainer, following):
        memory = self._memory
        if memory is None or not memory.recording:
            return
        with self._loop.own_work(self.name or self.default_name):
            memory.iteration_ended(trainer.updater.iteration)
            if not self._in_window(following):
                memory.stop()

    def _memory_started(self, trainer, following):
        # After the recorder: its listeners follow the timer's, whose spans
        # it names.
        if not self._in_window(following) or not self._recorder.running or (
                self._memory is not None and self._memory.recording):
            return
        with self._loop.own_work(self.name or self.default_name):
            self._memory = memory_timeline.MemoryTimeline(
                link_names.model_link_names(trainer),
                self._recorder, forget=False)
            self._memory.start()

    def _iteration_ending(self, trainer, following, first):
        needed = self._outliers is not None or self._window is not None or (
            first is not None and first <= following < first + self.iterations)
        outliers = self._unwritten and self._window is None
        if (self._done is None and not outliers
                and needed == self._recorder.running):
            return
        with self._loop.own_work(self.name or self.default_name):
            self._write_done()
            if outliers:
                self._write_outliers()
            if needed and not self._recorder.running:
                self._recorder.start(trainer, self._loop, self.validation,
                                     self.functions)
            elif not needed:
                self._recorder.stop()

    def _open_window(self, trainer, first, number, start):
        # ``number`` > ``first`` when a run resumes inside the window.
        if not self._recorder.running:
            with self._loop.own_work(self.name or self.default_name):
                self._recorder.start(trainer, self._loop, self.validation,
                                     self.functions)
        elif self._outliers is None:
            self._recorder.cut()
        self._window = _Window(first, [], [(number, start)], None)
        # The hosts' clock at the window's start: ranks on one time axis.
        self._unix_start = time.time() - (self._clock.now() - start)

    def _end_window(self, number, end):
        # Written in iteration_ending.
        window, self._window = self._window, None
        if self._outliers is None and self._recorder.running:
            if self._next_window == number:
                window.pieces.append(self._recorder.cut())
            else:
                with self._loop.own_work(self.name or self.default_name):
                    window.pieces.append(self._recorder.stop())
        self._done = window._replace(end=end)

    def _write_done(self):
        done, self._done = self._done, None
        if done is not None and done.pieces:
            self._write_window(done)

    def _write_window(self, window):
        memory = self._memory
        if memory is not None and not memory.recording:
            self._memory = None
        else:
            memory = None
        self._write(f'iteration_{window.first}',
                    _timeline_recorder.window_events(
                        window.starts, window.end, window.pieces,
                        self._rank(), memory))

    def _judge(self, ended):
        # An iteration another extension measured: no trace shows it.
        previous, self._previous = self._previous, ended
        if self._plan is not None and self._plan.measured(ended.number):
            self._previous = None
            return
        verdict = self._outliers.outlier(ended, previous, self._own_phase)
        if verdict is not None:  # counted now: max_outliers holds
            self._outliers.written += 1
            self._unwritten.append(_Outlier(ended, previous, verdict))

    def _write_outliers(self):
        unwritten, self._unwritten = self._unwritten, []
        for outlier in unwritten:
            events, other = _timeline_outliers.outlier_trace(
                outlier.iteration, outlier.previous, outlier.verdict,
                self._rank())
            if not self._write(
                    f'outlier_iteration_{outlier.iteration.number}',
                    events, other):
                self._outliers.written -= 1

    def release(self):
        if self._memory is not None:  # a window cut short: what it saw
            self._memory.stop()
        clock = self._clock
        end = clock.cut() if (
            clock is not None and self._recorder.running) else None
        piece = self._recorder.stop()
        try:
            self._write_done()
            window, self._window = self._window, None  # one cut short
            if window is not None and piece is not None:
                window.pieces.append(piece)
            if window is not None and window.pieces:
                self._write_window(window._replace(
                    end=window.starts[-1][1] if end is None else end))
            started = self._started
            if (piece is not None and started is not None
                    and clock is not None and clock.phase == phases.OTHER):
                # The stop trigger said stop: the last iteration is whole.
                self._judge(_timeline_outliers.ended(
                    started, end, piece,
                    clock.totals.get(self._own_phase, 0.0)))
            self._write_outliers()
        finally:
            self._discard()
            super().release()

    def _discard(self):
        memory, self._memory = self._memory, None
        if memory is not None:
            memory.stop()
        self._recorder.stop()
        self._window = self._done = None  # _done: recorded, not written
        self._started = self._ended = self._previous = None
        self._unwritten = []  # _Outlier, written outside windows
        if self._plan is not None:
            self._plan.forget(self)

    def _rank(self):
        return self.comm.rank if self.comm is not None else (
            _launcher_rank() or 0)

    def _write(self, name, events, other=None):
        # Whether written.  Under ChainerMN windows (``other`` None) gather.
        rank = _launcher_rank()
        if self.comm is not None and other is None:
            gathered = gather.collect(  # a collective
                self.comm, (self._unix_start, events))
            if self.comm.rank != 0:
                return False
            earliest = min(unix for unix, _ in gathered)
            events = [
                e for unix, rank_events in gathered
                for e in trace_events.shift(
                    rank_events, int(round((unix - earliest) * 1e9)))]
            rank = None
        elif self.comm is not None:
            rank = self.comm.rank
        if rank is not None:
            name += f'_rank{rank}'
        path = os.path.join(
            self._trainer.out, 'timeline',
            name + ('.json.gz' if self.compress else '.json'))
        try:
            written = trace.write(path, events, self.compress, other=other)
        except (OSError, ValueError) as e:
            if not self._failed:
                self._failed = True
                warnings.warn(f'Timeline: {path} could not be written '
                              f'({e}); training goes on.',
                              RuntimeWarning)
            return False
        if written:
            self.written.append(path)
        else:
            warnings.warn(
                f'Timeline: {path} exists already (a resumed run?); it is '
                'kept as it is.', RuntimeWarning)
        return written

    def serialize(self, serializer):
        """Saves or restores the scheduled window and outlier history."""
        if not _state.is_loading(serializer):
            pending = self._next_window if self._window is None else (
                self._window.first)  # the window not written yet
            serializer('next_window', numpy.asarray(
                -1 if pending is None else pending, numpy.int64))
            if self._outliers is not None:
                self._outliers.save(serializer)
            return
        try:
            pending = int(_state.read(serializer, 'next_window'))
        except KeyError as e:
            _state.warn_missing(self.name or self.default_name, e,
                                'No window is scheduled.')
            return
        self._next_window = None if pending < 0 else pending
        if self._outliers is not None:
            self._outliers.load(serializer)
        self._loaded = True


#: ``starts``: its ``[(number, start)]``; ``end``: set when it ends.
_Window = collections.namedtuple(
    '_Window', ('first', 'pieces', 'starts', 'end'))
#: An outlier iteration found, its trace not written yet.
_Outlier = collections.namedtuple(
    '_Outlier', ('iteration', 'previous', 'verdict'))


def _launcher_rank():
    values = (os.environ.get(var, '') for var in (
        'OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'PMIX_RANK'))
    return next((int(value) for value in values if value.isdigit()), None)

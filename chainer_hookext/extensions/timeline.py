import os
import time
import warnings

import numpy
from chainer.training import extension

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _registry
from chainer_hookext import _state
from chainer_hookext.extensions import timed_links
from chainer_hookext.link_hooks import timer
from chainer_hookext.report import gather
from chainer_hookext.report import link_names
from chainer_hookext.run import loop_phases
from chainer_hookext.timing import spans
from chainer_hookext.timing import trace
from chainer_hookext.timing import trace_events


class Timeline(loop_phases.LoopExtension):
    """Trainer extension writing a trace of chosen training iterations.

    Each time its trigger fires, the next ``iterations`` training
    iterations (after ``warmup`` more) are recorded, and one file is
    written when they end: ``<trainer.out>/timeline/iteration_<N>.json.gz``,
    ``N`` the first traced iteration.  Open it in Perfetto
    (ui.perfetto.dev, "Open trace file"): ``docs/timing.md`` shows what each
    track and name means.  In the thread ``training loop``, nested by time:
    ``iteration N`` > the phases of :class:`~chainer_hookext.TimedLoop`
    (``data``, ``forward`` ...) and each extension call > the spans of the
    model's links, ``main/predictor/l1`` forward and
    ``main/predictor/l1 (backward)``, one per run of consecutive backward
    steps of the link; each garbage collection, ``gc (generation 2)``,
    lies inside whatever span was running.  As in
    :class:`~chainer_hookext.TimedLinks`, the link spans are those of the
    update's calls and backward steps, whatever ``chainer.config.train``
    says there; with ``validation=True`` an
    ``Evaluator``'s link calls are shown too; an extension's own calls of
    the model are not (``docs/timing.md``, "Which calls count").

    The links' spans are the clock reads of the extension's own
    :class:`~chainer_hookext.TimerHook` (``backward=True``), registered
    for the window only: nothing is recorded outside windows, where the
    extension costs what :class:`~chainer_hookext.TimedLoop` does.  The
    output folder is checked when training starts; a file that cannot be
    written later is warned about, and training goes on.  A file is
    written aside then renamed, and never overwritten: after a resume,
    windows already written are kept, a window interrupted by the resume
    is completed (without the iterations before the snapshot), and the
    trigger goes on as in an uninterrupted run.  One ``Timeline`` per trainer.

    Args:
        iterations (int): Iterations per window.
        warmup (int): Iterations skipped after the trigger fires, before
            the window.
        validation (bool): Also record the link calls inside ``Evaluator``
            extensions.
        compress (bool): Write gzip (``.json.gz``); ``False``: ``.json``.
        comm (chainermn.CommunicatorBase): Under ChainerMN, rank 0 gathers
            every rank's window and writes one file, each rank a process of
            its own on one time axis (the hosts' clocks); without it, each
            rank writes its own file, the rank in its name
            (``iteration_101_rank1.json.gz``).

    Attributes:
        written (list of str): The files this extension wrote, in order.

    .. admonition:: Example

        >>> from chainer_hookext import Timeline
        >>> trainer.extend(Timeline(iterations=3), trigger=(1, 'epoch'))
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_READER
    default_name = 'Timeline'

    def __init__(self, iterations=3, *, warmup=0, validation=False,
                 compress=True, comm=None):
        iterations = _checks.check_int(
            'Timeline', 'iterations', iterations, 1)
        warmup = _checks.check_int('Timeline', 'warmup', warmup, 0)
        validation = _checks.check_flag('Timeline', 'validation', validation)
        compress = _checks.check_flag('Timeline', 'compress', compress)
        if comm is not None:
            gather.check_comm('Timeline', comm)
        super().__init__()
        self.iterations = iterations
        self.warmup = warmup
        self.validation = validation
        self.compress = compress
        self.comm = comm
        self._next_window = None  # first iteration of the scheduled window
        self._timer = timer.TimerHook(name='Timeline', backward=True)
        # (first iteration, Recording, the timer, its registry handle
        # or None when it is TimedLinks')
        self._window = None
        self._iteration_starts = []
        self._phase_spans = []  # the window's phases, from the clock
        self._gc_spans = []  # the window's collections, from the clock
        self._pauses = []  # the window's pauses of our own work, likewise
        self._unix_start = None
        self._loaded = False  # a snapshot loaded since the last run
        self._failed = False  # a file could not be written in this run
        self.written = []  # paths written in this process

    def initialize(self, trainer):
        self._close_window(write=False)
        _checks.check_one_per_trainer(
            trainer, self, 'write the same files', 'use one Timeline, with a '
            'trigger that fires at every window wanted')
        _check_folder(os.path.join(trainer.out, 'timeline'))
        if not self._loaded:  # a reused Timeline: only this run's windows
            self._next_window = None
        self._loaded = False
        self._failed = False
        super().initialize(trainer)

    def __call__(self, trainer):
        if self._window is None and self._next_window is None:
            self._next_window = trainer.updater.iteration + 1 + self.warmup

    def iteration_started(self, trainer):
        number = trainer.updater.iteration + 1  # the iteration starting
        start = self._loop.iteration_start
        window = self._window
        if window is not None:
            if number < window[0] + self.iterations:
                self._iteration_starts.append((number, start))
                return
            with self._loop.own_work(self.name or self.default_name):
                self._close_window(write=True, end=start)
        first = self._next_window
        if first is None or number < first:
            return
        self._next_window = None
        if number >= first + self.iterations:
            warnings.warn(
                'Timeline: the window of iterations {}-{} was scheduled '
                'before the snapshot this run resumed from, and has '
                'passed.'.format(first, first + self.iterations - 1),
                RuntimeWarning)
            return
        with self._loop.own_work(self.name or self.default_name):
            self._open_window(trainer, first, number, start)

    def _open_window(self, trainer, first, number, start):
        # ``first`` the window's first iteration; ``number`` > ``first``
        # when it resumes inside it.
        model = link_names.model_link_names(trainer)
        scope = {i: name for i, (name, _) in model.items()}
        hook = _timed_links_timer(trainer, scope, self.validation)
        handle = None
        if hook is None:  # a timer of its own, for the window
            hook = self._timer
            hook.set_scope(scope, train=True, eval=self.validation)
            optimizers = trainer.updater.get_all_optimizers()
            for name, optimizer in optimizers.items():  # as TimedLinks'
                hook.add_root(optimizer.target,
                              '/' if len(optimizers) == 1 else '/' + name)
            hook.set_iteration_parts(self._loop.parts)  # the update's calls
            handle = _registry.add(_chainer.link_hooks(), hook)
            self._loop.parts.set_phase_reader(hook)  # its reads, the phases'
        recording = spans.Recording()
        hook.start_spans(recording)
        self._window = first, recording, hook, handle
        # The clock has started this iteration: record its phases.
        self._phase_spans = []
        self._clock.span_lists.append(self._phase_spans)
        self._gc_spans = []
        self._clock.gc_lists.append(self._gc_spans)
        self._pauses = []
        self._clock.pause_lists.append(self._pauses)
        self._iteration_starts = [(number, start)]
        # The hosts' clock at the window's start: ranks on one time axis.
        self._unix_start = time.time() - (self._clock.now() - start)

    def release(self):
        self._close_window(write=True)
        super().release()

    def _close_window(self, write, end=None):
        window, self._window = self._window, None
        if window is None:
            return
        first, recording, hook, handle = window
        phase_clock = self._clock
        phase_spans, self._phase_spans = self._phase_spans, []
        gc_spans, self._gc_spans = self._gc_spans, []
        own_work, self._pauses = self._pauses, []
        if phase_clock is not None:
            if end is None:  # the loop ends: the running phase so far
                end = phase_clock.cut()
            phase_clock.span_lists.remove(phase_spans)
            phase_clock.gc_lists.remove(gc_spans)
            phase_clock.pause_lists.remove(own_work)
        elif end is None:
            end = self._iteration_starts[-1][1]
        hook.stop_spans()
        if handle is not None:
            parts = hook.parts
            try:
                _registry.remove(handle, hook)
            finally:
                hook.set_iteration_parts(None)
                if parts is not None and parts.phase_marks is not None and (
                        parts.phase_marks.reader is hook):
                    parts.set_phase_reader(None)
        if not write:
            return
        recording.resolve()
        recorded = trace_events.Window(
            self._iteration_starts, end, phase_spans, recording, gc_spans,
            own_work)
        rank = self.comm.rank if self.comm is not None else (
            _launcher_rank() or 0)
        self._write(first, trace_events.window_events(
            recorded, rank, recording.gpu))

    def _write(self, first, events):
        name = 'iteration_{}'.format(first)
        if self.comm is not None:
            gathered = self.comm.gather_obj(  # a collective
                (self._unix_start, events))
            if self.comm.rank != 0:
                return
            earliest = min(unix for unix, _ in gathered)
            events = [
                e for unix, rank_events in gathered
                for e in trace_events.shift(
                    rank_events, int(round((unix - earliest) * 1e9)))]
        elif _launcher_rank() is not None:
            name += '_rank{}'.format(_launcher_rank())
        path = os.path.join(
            self._trainer.out, 'timeline',
            name + ('.json.gz' if self.compress else '.json'))
        try:
            written = trace.write(path, events, self.compress)
        except (OSError, ValueError) as e:
            if not self._failed:
                self._failed = True
                warnings.warn('Timeline: {} could not be written ({}); '
                              'training goes on.'.format(path, e),
                              RuntimeWarning)
            return
        if written:
            self.written.append(path)
        else:
            warnings.warn(
                'Timeline: {} exists already (a resumed run?); it is kept '
                'as it is.'.format(path), RuntimeWarning)

    def serialize(self, serializer):
        """Saves or restores the scheduled window."""
        if not _state.is_loading(serializer):
            pending = self._next_window
            if self._window is not None:  # the window not written yet
                pending = self._window[0]
            serializer('next_window', numpy.asarray(
                -1 if pending is None else pending, numpy.int64))
            return
        try:
            pending = int(_state.read(serializer, 'next_window'))
        except KeyError as e:
            _state.warn_missing(self.name or self.default_name, e,
                                'No window is scheduled.')
            return
        self._next_window = None if pending < 0 else pending
        self._loaded = True


def _timed_links_timer(trainer, scope, validation):
    # The timer of the trainer's TimedLinks when it times every link of
    # ``scope`` in every mode the window shows: its clock reads are then
    # the window's, and a span is exactly what TimedLinks charges.
    for entry in _chainer.extension_entries(trainer).values():
        extension = entry.extension
        if not isinstance(extension, timed_links.TimedLinks):
            continue
        hook = extension.hook
        registered = extension.registered_hook()
        if registered is not hook or hook.parts is None:
            return None
        names = hook.link_names
        if names is not None and any(names.get(i) != name
                                     for i, name in scope.items()):
            return None
        if hook.config_train is True and validation:
            return None
        return hook
    return None


def _launcher_rank():
    # The rank an MPI launcher gives this process, if any.
    for var in ('OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'PMIX_RANK'):
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    return None


def _check_folder(path):
    # The traces' folder can be made and written, or a clear error now.
    try:
        os.makedirs(path, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError('not writable')
    except OSError as e:
        raise ValueError(
            'Timeline cannot write its traces to {!r}: {}. Give the trainer '
            'an `out` folder it can write, with no file named '
            '`timeline` in it.'.format(path, e)) from None

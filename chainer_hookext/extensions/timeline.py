import os
import warnings

import chainer
import numpy
from chainer.training import extension

from chainer_hookext import _registry
from chainer_hookext import _state
from chainer_hookext.extensions import _gathered_figures
from chainer_hookext.extensions import _link_names
from chainer_hookext.extensions._loop import loop_extension
from chainer_hookext.extensions._loop import phases
from chainer_hookext.extensions._timeline import link_spans
from chainer_hookext.extensions._timeline import trace
from chainer_hookext.link_hooks._timer import cuda_events


class Timeline(loop_extension.LoopExtension):
    """Trainer extension writing a trace of chosen training iterations.

    Each time its trigger fires, the next ``iterations`` training
    iterations (after ``warmup`` more) are recorded, and one file is
    written when they end: ``<trainer.out>/timeline/iteration_<N>.json.gz``,
    ``N`` the first traced iteration.  The file is in the Trace Event Format:
    open it as it is in Perfetto (ui.perfetto.dev) or chrome://tracing.

    It holds one span per iteration (``iteration 101``), in it the phases of
    :class:`~chainer_hookext.TimedLoop` (``data``, ``forward``,
    ``backward``, ``optimizer``, ``allreduce``) and one span per extension
    call (by its name in the trainer).  In ``forward``, one span per call of
    a link of the model (``main/predictor/l1``), nested as the calls nest;
    in ``backward``, one span per run of consecutive backward steps of the
    same link, with its steps and their seconds in ``args``.  With
    ``validation=True`` the ``Evaluator``'s link calls are shown too.

    Nothing is recorded outside windows, where the extension costs what
    :class:`~chainer_hookext.TimedLoop` does; its link hook is registered
    for the window only.  A file holds its window only, is written aside
    then renamed (a killed run never leaves a truncated trace), and is never
    overwritten: after a resume, windows already written are kept and the
    trigger goes on as in an uninterrupted run.  (Chainer skips the
    ``initialize`` of an extension whose trigger is ``finished``, e.g. a
    ``ManualScheduleTrigger`` past its last point: a window scheduled
    before such a snapshot is not recorded after the resume.  A trigger
    function of the iteration has no such state.)

    Args:
        iterations (int): Iterations per window.
        warmup (int): Iterations skipped after the trigger fires, before
            the window.
        validation (bool): Also record the link calls of evaluation mode.
        compress (bool): Write gzip (``.json.gz``); ``False``: ``.json``.
        comm (chainermn.CommunicatorBase): Under ChainerMN, rank 0 gathers
            every rank's window and writes one file, each rank a process of
            its own; without it, each rank writes its own file, the rank in
            its name (``iteration_101_rank1.json.gz``).

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
        for arg, value, least in (('iterations', iterations, 1),
                                  ('warmup', warmup, 0)):
            if isinstance(value, bool) or not isinstance(
                    value, int) or value < least:
                raise ValueError(
                    '`Timeline({}={!r})` needs an integer of at least '
                    '{}.'.format(arg, value, least))
        for arg, value in (('validation', validation),
                           ('compress', compress)):
            if not isinstance(value, bool):
                raise ValueError(
                    '`Timeline({}={!r})` is not a flag: use True or '
                    'False.'.format(arg, value))
        if comm is not None:
            _gathered_figures.check_comm('Timeline', comm)
        super().__init__()
        self.iterations = iterations
        self.warmup = warmup
        self.validation = validation
        self.compress = compress
        self.comm = comm
        self._next_window = None  # first iteration of the scheduled window
        self._window = None  # (first iteration, LinkSpans, registry handle)
        self._iteration_starts = []
        self._phase_spans = []  # the window's phases, from the clock
        self.written = []  # paths written in this process

    def initialize(self, trainer):
        self._close_window(write=False)
        super().initialize(trainer)

    def __call__(self, trainer):
        if self._window is None and self._next_window is None:
            self._next_window = trainer.updater.iteration + 1 + self.warmup

    def iteration_started(self, trainer):
        number = trainer.updater.iteration + 1  # the iteration starting
        start = self._loop.iteration_start
        window = self._window
        if window is not None:
            if number >= window[0] + self.iterations:
                self._close_window(write=True, end=start)
            else:
                self._iteration_starts.append((number, start))
                return
        if self._next_window is not None and number >= self._next_window:
            self._next_window = None
            self._open_window(trainer, number, start)

    def _open_window(self, trainer, first, start):
        optimizers = trainer.updater.get_all_optimizers()
        model = _link_names.model_link_names(trainer)
        gpu = any(cuda_events.is_gpu(o.target) for o in optimizers.values())
        spans = link_spans.LinkSpans(gpu=gpu)
        spans.set_scope({i: name for i, (name, _) in model.items()},
                        train=True, eval=self.validation)
        handle = _registry.add(chainer._get_link_hooks(), spans)
        self._window = first, spans, handle
        # The clock has started this iteration: record its phases.
        self._phase_spans = []
        self._clock.span_lists.append(self._phase_spans)
        self._iteration_starts = [(first, start)]

    def release(self):
        self._close_window(write=True)
        super().release()

    def _close_window(self, write, end=None):
        window, self._window = self._window, None
        if window is None:
            return
        first, spans, handle = window
        clock = self._clock
        phase_spans, self._phase_spans = self._phase_spans, []
        if clock is not None:
            if end is None:  # the loop ends: the running phase so far
                end = clock.cut()
            clock.span_lists.remove(phase_spans)
        elif end is None:
            end = self._iteration_starts[-1][1]
        _registry.remove(handle, spans)
        if not write:
            return
        spans.resolve()
        events = self._events(first, spans, phase_spans, end)
        self._write(first, events)

    def _events(self, first, spans, phase_spans, end):
        origin = self._iteration_starts[0][1]
        rank = 0 if self.comm is None else self.comm.rank
        events = trace.metadata(rank, 'rank {}'.format(rank))
        starts = self._iteration_starts + [(None, end)]
        for (number, start), (_, stop) in zip(starts, starts[1:]):
            events.append(trace.complete(
                'iteration {}'.format(number), 'iteration', start, stop,
                origin, rank))
        for span in phase_spans:
            if span.name == phases.OTHER or span.start < origin:
                continue
            if span.name.startswith(phases.EXTENSION):
                events.append(trace.complete(
                    span.name[len(phases.EXTENSION):], 'extension',
                    span.start, span.end, origin, rank))
            else:
                events.append(trace.complete(
                    span.name, 'phase', span.start, span.end, origin, rank))
        for span in spans.forward:
            events.append(trace.complete(
                span.name, 'forward', span.start, span.end, origin, rank))
        for run in link_spans.backward_runs(spans.steps):
            length = run.end - run.start
            events.append(trace.complete(
                run.name, 'backward', run.start, run.end, origin, rank, {
                    'steps': run.steps, 'step_seconds': run.seconds,
                    'share': run.seconds / length if length > 0 else 1.0}))
        return events

    def _write(self, first, events):
        name = 'iteration_{}'.format(first)
        if self.comm is not None:
            gathered = self.comm.gather_obj(events)  # a collective
            if self.comm.rank != 0:
                return
            events = [e for rank_events in gathered for e in rank_events]
        else:
            rank = _launcher_rank()
            if rank is not None:
                name += '_rank{}'.format(rank)
        path = os.path.join(
            self._trainer.out, 'timeline',
            name + ('.json.gz' if self.compress else '.json'))
        if trace.write(path, events, self.compress):
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
            pending = int(serializer('next_window', -1))
        except KeyError as e:
            _state.warn_missing(self.name or self.default_name, e,
                                'No window is scheduled.')
            return
        self._next_window = None if pending < 0 else pending


def _launcher_rank():
    # The rank an MPI launcher gives this process, if any.
    for var in ('OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'PMIX_RANK'):
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    return None

"""The trainer extension reporting where each training iteration goes
(docs/timing.md, "`TimedLoop`: where each iteration goes")."""

import collections
import functools
import itertools
import sys
import typing

import chainer
import numpy
from chainer.training import extension

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _state
from chainer_hookext.extensions import timed_links
from chainer_hookext.report import console
from chainer_hookext.report import gather
from chainer_hookext.report import keys
from chainer_hookext.report import tables
from chainer_hookext.report import units
from chainer_hookext.run import loop_phases
from chainer_hookext.timing import phases


#: What each rank sends rank 0 at a report: ``{figure: seconds per
#: iteration}`` and the tail's ``{figure: value}`` (``{}`` without one).
LoopFigures = collections.namedtuple('LoopFigures', ('figures', 'tail'))
#: An iteration's start: the clock's time, its totals, its gc seconds.
_Start = collections.namedtuple('_Start', ('time', 'totals', 'gc'))
# The figures' names, made once each (a report makes some 23).
_phase_figure = functools.lru_cache(maxsize=None)(keys.phase_figure)
_loop_key = functools.lru_cache(maxsize=None)(keys.loop_key)
_slowest_figure = functools.lru_cache(maxsize=None)(keys.slowest_figure)
_TAIL_FIGURES = tuple(keys.tail_figure(s) for s in keys.TAIL)


class TimedLoop(loop_phases.LoopExtension):
    """Trainer extension reporting where each training iteration goes.

    At each trigger it reports ``time/loop/iteration`` and its phases
    (``data``, ``forward``, ``backward``, ``optimizer``, ``extensions``,
    ``extension/<name>``, ``other``, ``gc``) in seconds per iteration since
    its last report, and the tail of those iterations
    (``time/loop/iteration/max``, ``p50``, ``p90``, ``time/loop/slowest``);
    the keys and the marks that start each phase: docs/timing.md.

    Args:
        print_report (bool): Print a table of the phases at each trigger.
        unit (str): Unit of the table: ``'sec'``, ``'ms'``, ``'us'``,
            ``'ns'``, ``'auto'`` or ``'auto_foreach'``.
        comm (chainermn.CommunicatorBase): Under ChainerMN, gather every
            worker's figures on rank 0 (docs/timing.md, "ChainerMN").

    .. admonition:: Example

        >>> from chainer_hookext import TimedLoop
        >>> trainer.extend(TimedLoop(), trigger=(1, 'epoch'))
        >>> trainer.extend(extensions.PrintReport(
        ...     ['epoch', 'time/loop/iteration', 'time/loop/data',
        ...      'time/loop/extension/validation']))
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_WRITER
    default_name = 'TimedLoop'
    #: How many iteration times the tail keeps per interval at most.
    tail_size = 10000

    def __init__(self, *, print_report: bool = False, unit: str = 'auto',
                 comm: typing.Any = None) -> None:
        self.print_report = _checks.check_flag(
            'TimedLoop', 'print_report', print_report)
        units.check_unit('TimedLoop', unit)
        if comm is not None:
            gather.check_comm('TimedLoop', comm)
        self.unit = unit
        self.comm = comm
        super().__init__()
        # Per run: the extensions' {figure: name}, and every figure.
        self._extensions = collections.OrderedDict()
        self._present = frozenset()
        self._first_iteration = None
        self._last_iteration = None
        # {figure: seconds} of earlier (resumed) runs, and at the last report.
        self._saved = {}
        self._baseline = {}
        self._times = phases.IterationTimes(self.tail_size)
        self._start = None

    def initialize(self, trainer: chainer.training.Trainer) -> None:
        self.release()
        entries = _chainer.extension_entries(trainer)
        self._extensions = collections.OrderedDict(
            (keys.phase_figure(phases.ExtensionPhase(name)), name)
            for name in entries)
        self._present = frozenset(keys.loop_figures(entries))
        for entry in entries.values():
            other = entry.extension
            if isinstance(other, timed_links.TimedLinks):
                keys.check_loop_keys(
                    other.scope_link_names(trainer).values(), other.backward,
                    other.comm is not None, list(entries),
                    self.comm is not None)
        last = self._last_iteration
        if last is not None and trainer.updater.iteration < last:
            # A new run, not a resumed one.
            self._first_iteration = self._last_iteration = None
            self._saved, self._baseline = {}, {}
            self._times = phases.IterationTimes(self.tail_size)
        super().initialize(trainer)

    def iteration_ended(self, trainer: chainer.training.Trainer) -> None:
        # Known only now: ``snapshot(autoload=True)``, loaded after
        # initialize, moves the iteration.
        if self._last_iteration is None:
            iteration = trainer.updater.iteration
            self._first_iteration = self._last_iteration = iteration
        # Hot path: no reader has worked since iteration_start, so the
        # clock's totals are exact without a read.
        loop = self._loop
        clock = loop.clock
        start = loop.iteration_start
        begun = self._start
        if begun is not None:
            self._times.add(trainer.updater.iteration, start - begun.time,
                            self._ended_figures)
        self._start = _Start(start, dict(clock.totals), clock.gc)

    def _ended_figures(self):
        # The iteration ending now, by figure: only for the slowest so far.
        begun = self._start
        clock = self._clock
        seconds = {_phase_figure(p): s - begun.totals.get(p, 0.0)
                   for p, s in clock.totals.items()}
        seconds[keys.GC] = clock.gc - begun.gc
        return seconds

    def release(self) -> None:
        clock = self._clock
        if clock is not None:  # this run's figures stay when it ends
            if self._start is not None and clock.phase == phases.OTHER:
                # The stop trigger said stop: the last iteration is whole.
                end = clock.now()
                clock.read(end)
                self._times.add(self._trainer.updater.iteration,
                                end - self._start.time, self._ended_figures)
            self._saved = self._totals()
        self._start = None
        super().release()

    def _totals(self):
        totals = dict(self._saved)
        clock = self._clock
        if clock is not None:
            for phase, seconds in clock.read().items():
                figure = _phase_figure(phase)
                totals[figure] = totals.get(figure, 0.0) + seconds
            totals[keys.GC] = totals.get(keys.GC, 0.0) + clock.gc
        return totals

    def _figures(self, totals, then, n):
        # {figure: seconds per iteration}, in report order.  An extension
        # the trainer no longer has (since a snapshot) is reported while it
        # has time, after the others, so that the figures add up.
        delta = {p: max(s - then.get(p, 0.0), 0.0) / n
                 for p, s in totals.items()}
        for p in then:
            if p not in delta:  # no time since
                delta[p] = 0.0
        gc_seconds = delta.pop(keys.GC, 0.0)  # inside the phases
        get = delta.get
        figures = collections.OrderedDict()
        figures[keys.ITERATION] = sum(delta.values())
        for p in phases.UPDATE_PHASES:
            if p != phases.ALLREDUCE or p in delta:
                figures[p] = get(p, 0.0)
        present = self._present
        extensions = list(self._extensions)
        gone = [f for f, s in delta.items() if s > 0 and f not in present]
        if gone:
            extensions += sorted(gone)
        seconds = [get(e, 0.0) for e in extensions]
        figures[keys.EXTENSIONS] = sum(seconds)
        figures.update(zip(extensions, seconds))
        figures[phases.OTHER] = get(phases.OTHER, 0.0)
        figures[keys.GC] = gc_seconds
        return figures

    def _take_tail(self):
        # The interval's tail ({} if no iteration completed); a new one starts.
        times = self._times
        self._times = phases.IterationTimes(self.tail_size)
        if times.slowest is None:
            return collections.OrderedDict()
        tail = collections.OrderedDict(zip(_TAIL_FIGURES, (
            (times.max,) + times.percentiles(50, 90))))
        tail[keys.SLOWEST] = times.slowest
        for f, s in self._figures(times.phases, {}, 1).items():
            if f != keys.ITERATION:  # its max
                tail[_slowest_figure(f)] = s
        return tail

    def __call__(self, trainer: chainer.training.Trainer) -> None:
        if self._last_iteration is None:  # called before training
            return
        iteration = trainer.updater.iteration
        n = iteration - self._last_iteration
        totals = self._totals()
        figures = self._figures(totals, self._baseline, n) if n > 0 else {}
        tail = self._take_tail()
        self._baseline = totals
        self._last_iteration = iteration
        if self.comm is not None:
            self._report_gathered(figures, tail, iteration)
        elif figures:
            chainer.report({_loop_key(f): s for f, s in itertools.chain(
                figures.items(), tail.items())})
            if self.print_report:
                self._print(figures, tail, f'averaged over {n} iterations',
                            iteration)

    def _report_gathered(self, figures, tail, iteration):
        # A collective: every rank calls it at every report.
        per_rank = gather.collect(self.comm, LoopFigures(figures, tail))
        if per_rank is None:
            return
        sent = [one.figures for one in per_rank]
        spreads = gather.spreads(sent)
        if not spreads:
            return
        observation = gather.spread_observation(sent, keys.loop_key)
        tail = gather.slowest_worker([sent.tail for sent in per_rank])
        observation.update((keys.loop_key(f), v) for f, v in tail.items())
        chainer.report(observation)
        if self.print_report:
            self._print(collections.OrderedDict(
                (f, spread.mean) for f, spread in spreads.items()), tail,
                f'mean over {self.comm.size} workers', iteration)

    def _print(self, figures, tail, how, iteration):
        console.write([f'TimedLoop at iteration {iteration}: seconds per '
                       f'training iteration, {how}'], sys.stdout)
        labels = {figure: '  ' + name
                  for figure, name in self._extensions.items()}
        labels.update((f, '  ' + f) for f in figures
                      if f not in self._present)
        tables.print_share_table(collections.OrderedDict(
            (labels.get(f, f), s) for f, s in figures.items()),
            figures[keys.ITERATION], self.unit, sys.stdout)
        if tail:
            times = [tail[keys.tail_figure(s)] for s in keys.TAIL]
            fmt = units.formatter(self.unit, times)
            rank = (f' (rank {tail[keys.SLOWEST_RANK]})'
                    if keys.SLOWEST_RANK in tail else '')
            top, p50, p90 = (fmt(t) for t in times)
            console.write([f'slowest iteration {tail[keys.SLOWEST]}{rank}: '
                           f'{top}; p50 {p50}, p90 {p90}'], sys.stdout)

    def summary(self) -> typing.Dict[str, float]:
        """Returns seconds per iteration of each phase over the whole run,
        resumed parts included, keyed without ``time/loop/`` (``{}`` before
        any iteration)."""
        if self._first_iteration is None:
            return collections.OrderedDict()
        trainer = self._trainer  # during its run, or after it
        last = (self._last_iteration if trainer is None
                else trainer.updater.iteration)
        n = last - self._first_iteration
        return (self._figures(self._totals(), {}, n) if n > 0
                else collections.OrderedDict())

    def serialize(self, serializer: chainer.AbstractSerializer) -> None:
        """Saves or restores the figures, the last report's and the tail of
        the iterations completed since (docs/timing.md, "Resume")."""
        if not _state.is_loading(serializer):
            for name, values in (('totals', self._totals()),
                                 ('baseline', self._baseline)):
                _state.save_rows(serializer[name], list(values), {
                    'seconds': list(values.values())})
            serializer('iterations', numpy.asarray([
                -1 if i is None else i
                for i in (self._first_iteration, self._last_iteration)],
                numpy.int64))
            self._times.save(serializer['tail'])
            return
        try:
            saved, baseline = ({p: v['seconds'] for p, v in _state.load_rows(
                _state.child(serializer, name), ('seconds',))}
                for name in ('totals', 'baseline'))
            first, last = (
                int(i) for i in _state.read(serializer, 'iterations'))
        except _state.MissingState as e:
            _state.warn_missing(self.name or self.default_name, e,
                                'Timing starts afresh.')
            self._saved, self._baseline = {}, {}
            self._first_iteration = self._last_iteration = None
            return
        self._saved, self._baseline = saved, baseline
        self._first_iteration = None if first < 0 else first
        self._last_iteration = None if last < 0 else last
        self._times = phases.IterationTimes.load(serializer, self.tail_size)
        self._start = None

"""Which iterations :class:`~chainer_hookext.Timeline` writes as outliers,
and what their traces say (docs/timing.md, "Outlier traces")."""

import collections
import datetime
import math
import numbers
import warnings

import numpy

from chainer_hookext import _checks
from chainer_hookext import _state
from chainer_hookext.extensions import _timeline_recorder
from chainer_hookext.report import keys
from chainer_hookext.report import units
from chainer_hookext.timing import pauses
from chainer_hookext.timing import phases
from chainer_hookext.timing import part_history

RECENT = 50  # runs of each part whose seconds give its running median
WARMUP = 20  # iterations added before any is judged
RUNS = 3  # runs of an extension before its own are judged
FACTOR = 3.0  # ``outliers=True``: slower than this times its baseline
SIGNATURES = 32  # sets of extensions called together whose runs are kept
UPDATE = part_history.UPDATE

#: ``seconds``: less the Timeline's own work.
Iteration = collections.namedtuple(
    'Iteration', ('number', 'start', 'end', 'piece', 'seconds'))
#: ``own``: the clock's total of the Timeline's own phase at its start.
Started = collections.namedtuple('Started', ('number', 'start', 'own'))
#: ``baseline``: what the part is judged against (``None``: not judged).
Part = collections.namedtuple(
    'Part', ('name', 'seconds', 'median', 'runs', 'baseline'))
#: ``part``: the one grown most over its baseline; ``grew_most``: the
#: update's phase grown most since the iteration before.
Verdict = collections.namedtuple(
    'Verdict', ('seconds', 'part', 'threshold', 'grew_most', 'grew_seconds'))


def ended(started, end, piece, own):
    return Iteration(started.number, started.start, end, piece,
                     end - started.start - (own - started.own))


def check(outliers):
    """``outliers=`` as ``None``, a factor or a ``timedelta``, or raises."""
    what = (f'use True (a part of an iteration slower than {FACTOR:g} '
            'times its own running median), a factor above 1 (e.g. 5.0), a '
            'datetime.timedelta (an absolute threshold, e.g. '
            'timedelta(seconds=0.5)), or None.')
    call = f'`Timeline(outliers={_checks.shown(outliers)})`'
    if outliers is None or outliers is False or outliers is numpy.False_:
        return None
    if outliers is True or outliers is numpy.True_:
        return FACTOR
    if isinstance(outliers, datetime.timedelta):
        if outliers <= datetime.timedelta(0):
            raise ValueError(f'{call} is not above 0: {what}')
        return outliers
    if not isinstance(outliers, numbers.Real) or isinstance(
            outliers, numpy.bool_):
        raise TypeError(f'{call} is not a flag, a factor or a '
                        f'datetime.timedelta: {what}')
    if not 1 < outliers < math.inf:
        raise ValueError(f'{call} is not a factor above 1: {what}')
    return float(outliers)


class OutlierRule:
    """Each part's recent runs, and the outlier traces ``written``."""

    def __init__(self, rule, max_outliers):
        self.rule = rule
        self.max_outliers = max_outliers
        self.reset()

    def reset(self):
        self.history = part_history.PartHistory(RECENT, SIGNATURES)
        self.iterations = 0
        self.written = 0
        self.warned = False

    def judge(self, iteration, previous, left_out):
        """Returns a :class:`Verdict` or ``None``, then adds the parts to
        their histories; ``left_out`` (the Timeline's own phase) is none."""
        spent = phase_seconds(iteration, left_out)
        called = {}  # the extensions' phases; the update's add up
        update = 0.0
        for phase, seconds in spent.items():
            if type(phase) is phases.ExtensionPhase:
                called[phase] = seconds
            else:
                update += seconds
        runs = self.history.runs(frozenset(called))
        verdict = None
        if previous is not None and self.iterations >= WARMUP:
            verdict = self._verdict(iteration.seconds, update, called, runs)
            if verdict is not None and verdict.part.name == UPDATE:
                before = phase_seconds(previous, left_out)
                grew, grew_most = max(
                    (s - before.get(phase, 0.0), figure(phase))
                    for phase, s in spent.items() if phase not in called)
                verdict = verdict._replace(grew_most=grew_most,
                                           grew_seconds=grew)
        self.history.add(update, called, runs)
        self.iterations += 1
        return verdict

    def _verdict(self, seconds, update, called, runs):
        absolute = isinstance(self.rule, datetime.timedelta)
        if absolute and seconds <= self.rule.total_seconds():
            return None
        history = self.history.update
        floor = history.median()
        grown = []
        for key, spent_in, runs_of in [(UPDATE, update, history)] + [
                (phase, s, runs.get(phase)) for phase, s in called.items()]:
            baseline = _baseline(key, runs_of, floor)
            if absolute or (baseline is not None
                            and spent_in > self.rule * baseline):
                n = len(runs_of) if runs_of is not None else 0
                grown.append(Part(figure(key), spent_in, runs_of.median()
                                  if n else None, n, baseline))
        if not grown:
            return None
        part = max(grown, key=lambda p: p.seconds - (p.baseline or 0.0))
        threshold = (self.rule.total_seconds() if absolute
                     else self.rule * part.baseline)
        return Verdict(seconds, part, threshold, part.name,
                       part.seconds - (part.median or 0.0))

    def outlier(self, iteration, previous, left_out):
        """:meth:`judge`'s verdict when its trace is to be written."""
        verdict = self.judge(iteration, previous, left_out)
        if verdict is None or self.written < self.max_outliers:
            return verdict
        if not self.warned:
            self.warned = True
            warnings.warn(
                f'Timeline: {self.written} outlier traces are written '
                f'(max_outliers={self.max_outliers}); later outliers '
                f'(iteration {iteration.number} is one) are no longer '
                'written. Give Timeline a larger max_outliers (or a higher '
                'threshold in outliers=) to have more.', RuntimeWarning)
        return None

    def save(self, serializer):
        self.history.save(serializer['outlier_history'])
        for key, value in (('outlier_iterations', self.iterations),
                           ('outliers_written', self.written)):
            serializer(key, numpy.asarray(value, numpy.int64))

    def load(self, serializer):
        # Without it, afresh silently.
        self.reset()
        try:
            self.written = int(_state.read(serializer, 'outliers_written'))
            iterations = _state.read(serializer, 'outlier_iterations')
            self.history.load(_state.child(serializer, 'outlier_history'))
        except _state.MissingState:
            self.history = part_history.PartHistory(RECENT, SIGNATURES)
            return
        self.iterations = int(iterations)


def _baseline(key, history, floor):
    if history is None:
        return None
    if key == UPDATE:
        return history.median()
    if len(history) < RUNS:
        return None
    return max(history.median(), floor or 0.0)


def figure(part):
    return UPDATE if part == UPDATE else keys.phase_figure(part)


def phase_seconds(iteration, left_out):
    """``{phase: seconds}`` but ``left_out``; pauses as phases of their own.
    """
    seconds = {}
    first, last = iteration.start, iteration.end
    own_work = [p for p in iteration.piece.pauses
                if first <= p.start and p.end <= last]
    index = pauses.PauseIndex(own_work) if own_work else None
    for phase, start, end in iteration.piece.phase_spans:
        if start < first or end > last or phase == left_out:
            continue
        seconds[phase] = seconds.get(phase, 0.0) + (
            end - start if index is None else sum(
                b - a for a, b in index.cut(start, end)))
    for pause in own_work:
        phase = phases.ExtensionPhase(pause.name)
        if phase != left_out:
            seconds[phase] = seconds.get(phase, 0.0) + (
                pause.end - pause.start)
    return seconds


def ratio(part):
    return part.seconds / part.baseline if part.baseline else None


def why(verdict, previous):
    part = verdict.part
    line = f'{part.name}: {units.seconds(part.seconds)}, '
    median = units.seconds(part.median or 0.0)
    if part.baseline is None:
        line += ('its first run' if not part.runs else
                 f'after only {part.runs} runs, too few to judge')
    elif part.baseline == part.median:
        times = f'{ratio(part):.1f}x' if part.baseline else 'above'
        line += f'{times} its median of {median} over {part.runs} runs'
    else:
        line += (f"{ratio(part):.1f}x the update's median of "
                 f'{units.seconds(part.baseline)} (its own median: '
                 f'{median} over {part.runs} runs)')
    if part.name == UPDATE:
        line += (f'; {verdict.grew_most} grew most since iteration '
                 f'{previous.number}, by '
                 f'{units.seconds(verdict.grew_seconds)}')
    return line


def about(iteration, previous, verdict):
    part = verdict.part
    return {
        'iteration': iteration.number, 'seconds': verdict.seconds,
        'part': part.name, 'part_seconds': part.seconds,
        'median_seconds': part.median, 'runs': part.runs,
        'baseline_seconds': part.baseline, 'ratio': ratio(part),
        'threshold_seconds': verdict.threshold,
        'grew_most': verdict.grew_most, 'grew_seconds': verdict.grew_seconds,
        'previous_iteration': previous.number,
        'previous_seconds': previous.seconds, 'why': why(verdict, previous)}


def outlier_trace(iteration, previous, verdict, rank):
    """The events of an outlier and the iteration before, and otherData."""
    events = _timeline_recorder.window_events(
        [(previous.number, previous.start), (iteration.number,
                                             iteration.start)],
        iteration.end, [previous.piece, iteration.piece], rank)
    said = about(iteration, previous, verdict)
    name = f'iteration {iteration.number}'
    for event in events:
        if event['name'] == name and event.get('cat') == 'iteration':
            event['args'] = dict(said, outlier=True)
    return events, {'outlier': said}

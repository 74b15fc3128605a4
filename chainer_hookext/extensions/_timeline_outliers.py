"""Which iterations :class:`~chainer_hookext.Timeline` writes as outliers,
and what their traces say about them.

An :class:`OutlierRule` keeps the seconds of the last :data:`RECENT`
iterations (their running median) and the count of outlier traces written:
both are the Timeline's state in a snapshot.  Each iteration is judged
against the iterations before it, then joins them.
"""

import bisect
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
from chainer_hookext.timing import pauses
from chainer_hookext.timing import phases

#: Iterations whose seconds give the running median.
RECENT = 100
#: Iterations added before any is judged.
WARMUP = 20
#: ``outliers=True``: slower than this many times the running median.
FACTOR = 3.0

#: An iteration recorded whole: ``number``, ``start`` and ``end`` (clock
#: seconds), its :class:`~._timeline_recorder.Piece`, and ``seconds``, its
#: time less the Timeline's own work in it.
Iteration = collections.namedtuple(
    'Iteration', ('number', 'start', 'end', 'piece', 'seconds'))

#: The iteration running: its ``number``, ``start`` and the clock's total
#: of the Timeline's own phase then (``own``).
Started = collections.namedtuple('Started', ('number', 'start', 'own'))

#: Why an iteration is an outlier: its ``seconds``, the ``median`` of the
#: iterations before it and the ``threshold`` it passed.
Verdict = collections.namedtuple('Verdict', ('seconds', 'median', 'threshold'))


def ended(started, end, piece, own):
    """Returns the :class:`Iteration` ``started`` (a :class:`Started`)
    ended at ``end``, recorded in ``piece``, ``own`` the clock's total of
    the Timeline's own phase then."""
    return Iteration(started.number, started.start, end, piece,
                     end - started.start - (own - started.own))


def check(outliers):
    """Returns ``Timeline(outliers=...)`` as ``None`` (off), a factor
    (``float``) or a threshold (``datetime.timedelta``); raises unless it
    is one of those, ``True`` or ``False``."""
    what = ('use True (slower than {:g} times the running median), a '
            'factor above 1 (e.g. 5.0), a datetime.timedelta (an absolute '
            'threshold, e.g. timedelta(seconds=0.5)), or None.'.format(
                FACTOR))
    call = '`Timeline(outliers={})`'.format(_checks.shown(outliers))
    if outliers is None or outliers is False or outliers is numpy.False_:
        return None
    if outliers is True or outliers is numpy.True_:
        return FACTOR
    if isinstance(outliers, datetime.timedelta):
        if outliers <= datetime.timedelta(0):
            raise ValueError('{} is not above 0: {}'.format(call, what))
        return outliers
    if not isinstance(outliers, numbers.Real) or isinstance(
            outliers, numpy.bool_):
        raise TypeError('{} is not a flag, a factor or a '
                        'datetime.timedelta: {}'.format(call, what))
    if not 1 < outliers < math.inf:
        raise ValueError('{} is not a factor above 1: {}'.format(call, what))
    return float(outliers)


class OutlierRule(object):
    """The running median of the recent iterations and the outliers written.

    Args:
        rule: What :func:`check` returned (not ``None``).
        max_outliers (int): Outlier traces written at most.

    Attributes:
        written (int): The outlier traces written (resumed runs included).
        warned (bool): Whether this run said that no more are written.
    """

    def __init__(self, rule, max_outliers):
        self.rule = rule
        self.max_outliers = max_outliers
        self.reset()

    def reset(self):
        """Forgets the iterations and the outliers written."""
        self._recent = collections.deque()  # seconds, oldest first
        self._sorted = []  # the same, sorted
        self.written = 0
        self.warned = False

    def full(self):
        """Whether ``max_outliers`` traces are written."""
        return self.written >= self.max_outliers

    def median(self):
        """Returns the median of the recent seconds, or ``None``."""
        kept, n = self._sorted, len(self._sorted)
        if not n:
            return None
        return kept[n // 2] if n % 2 else (kept[n // 2 - 1] + kept[n // 2]) / 2

    def threshold(self, median):
        """Returns the seconds above which an iteration is an outlier."""
        if isinstance(self.rule, datetime.timedelta):
            return self.rule.total_seconds()
        return self.rule * median

    def judge(self, seconds, judged=True):
        """Returns a :class:`Verdict` when an iteration of ``seconds`` is
        an outlier (never in the warm-up, nor when not ``judged``), else
        ``None``; then adds it to the recent iterations."""
        verdict = None
        if judged and len(self._recent) >= WARMUP:
            median = self.median()
            threshold = self.threshold(median)
            if seconds > threshold:
                verdict = Verdict(seconds, median, threshold)
        self._add(seconds)
        return verdict

    def outlier(self, iteration, previous):
        """Returns a :class:`Verdict` when ``iteration`` is an outlier to
        write (``previous`` the one before it, or ``None``: not judged).
        Warns, once, of an outlier not written past ``max_outliers``."""
        verdict = self.judge(iteration.seconds, previous is not None)
        if verdict is None or not self.full():
            return verdict
        if not self.warned:
            self.warned = True
            warnings.warn(
                'Timeline: {} outlier traces are written (max_outliers={}); '
                'later outliers (iteration {} is one) are no longer '
                'written. Give Timeline a larger max_outliers (or a higher '
                'threshold in outliers=) to have more.'.format(
                    self.written, self.max_outliers, iteration.number),
                RuntimeWarning)
        return None

    def _add(self, seconds):
        if len(self._recent) == RECENT:
            oldest = self._recent.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, oldest)]
        self._recent.append(seconds)
        bisect.insort(self._sorted, seconds)

    def save(self, serializer):
        """Saves the recent seconds and the count written."""
        serializer('outlier_seconds', numpy.asarray(
            self._recent, numpy.float64))
        serializer('outliers_written', numpy.asarray(
            self.written, numpy.int64))

    def load(self, serializer):
        """Restores what :meth:`save` saved; a snapshot without it (an
        earlier version's, or of a Timeline without outliers) starts
        afresh, without a warning."""
        self.reset()
        try:
            seconds = _state.read(serializer, 'outlier_seconds')
            written = _state.read(serializer, 'outliers_written')
        except _state.MissingState:
            return
        for s in numpy.ravel(seconds)[-RECENT:]:
            self._add(float(s))
        self.written = int(written)


def phase_seconds(iteration, left_out):
    """Returns ``{figure: seconds}`` of ``iteration``'s phases, named as
    :class:`~chainer_hookext.TimedLoop`'s figures (``data``,
    ``extension/<name>``), but for the phase ``left_out``."""
    seconds = {}
    own_work = [p for p in iteration.piece.pauses
                if iteration.start <= p.start and p.end <= iteration.end]
    index = pauses.PauseIndex(own_work)  # taken out of the phases
    for span in iteration.piece.phase_spans:
        if span.phase == left_out or span.start < iteration.start or (
                span.end > iteration.end):
            continue
        figure = keys.phase_figure(span.phase)
        seconds[figure] = seconds.get(figure, 0.0) + sum(
            end - start for start, end in index.cut(span.start, span.end))
    for pause in own_work:
        phase = phases.ExtensionPhase(pause.name)
        if phase != left_out:
            figure = keys.phase_figure(phase)
            seconds[figure] = seconds.get(figure, 0.0) + (
                pause.end - pause.start)
    return seconds


def about(iteration, previous, verdict, left_out):
    """Returns what an outlier's trace says about it (JSON values): the
    figures of :class:`Verdict`, the previous iteration's number and
    seconds, and the phase that grew most since it (``left_out``, the
    Timeline's own, aside)."""
    now = phase_seconds(iteration, left_out)
    before = phase_seconds(previous, left_out)
    grown = {p: s - before.get(p, 0.0) for p, s in now.items()}
    grew = max(grown, key=grown.get) if grown else None
    return {
        'iteration': iteration.number,
        'seconds': verdict.seconds,
        'median_seconds': verdict.median,
        'threshold_seconds': verdict.threshold,
        'previous_iteration': previous.number,
        'previous_seconds': previous.seconds,
        'grew_most': grew,
        'grew_seconds': grown[grew] if grew is not None else 0.0,
    }


def outlier_trace(iteration, previous, verdict, rank, left_out):
    """Returns the events of an outlier's trace, the outlier and the
    iteration before it, and its ``otherData``: :func:`about` them, also
    the ``args`` of the outlier's slice, which Perfetto shows."""
    events = _timeline_recorder.window_events(
        [(previous.number, previous.start), (iteration.number,
                                             iteration.start)],
        iteration.end, [previous.piece, iteration.piece], rank)
    said = about(iteration, previous, verdict, left_out)
    name = 'iteration {}'.format(iteration.number)
    for event in events:
        if event['name'] == name and event.get('cat') == 'iteration':
            event['args'] = dict(said, outlier=True)
    return events, {'outlier': said}

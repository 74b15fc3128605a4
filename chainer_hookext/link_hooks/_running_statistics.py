"""Running statistics of arrays, on their device, without keeping them.

What :class:`~chainer_hookext.ActivationStatisticsHook` (forward outputs)
and :class:`~chainer_hookext.GradientStatisticsHook` (gradients w.r.t.
them) accumulate per key.  Each array adds one *row*, computed on the
array's device in float64 without a synchronisation::

    [sum, sum of squares, min, max, zeros(, norm)]

of the values less a *shift* (the mean of the first array of the key since
the last reset, so that the variance's subtraction loses nothing when the
mean is large beside the spread); ``norm`` (gradients) is the L2 norm of the
array itself: for NumPy derived from the shifted sums where that loses
nothing (``_norm``), else, and on a device, its own dot product.  Rows are
Python floats for NumPy; for a device array one float64 device array, and
every :data:`FOLD` rows are folded into one.
:meth:`Running.values` makes the figures, after one
:func:`~chainer_hookext._arrays.to_host` of every key's :meth:`Running.row`.
"""

import math

import numpy
from chainer import backend

from chainer_hookext import _arrays


#: Per-call rows kept before they are folded into one.
FOLD = 64


class Table(object):
    """The running values of each key of one hook, and its report.

    Args:
        statistics (tuple of str): The names reported.
        key (callable): ``key(*table_key, statistic)``: the reported key
            (:mod:`chainer_hookext.report.keys`).
        norm (bool): Keep each array's L2 norm too (gradients).
    """

    def __init__(self, statistics, key, norm=False):
        self.statistics = statistics
        self.key = key
        self.norm = norm
        self.running = {}  # {key: Running}

    def add(self, key, array):
        """Adds ``array`` (non-empty, floating point) to ``key``'s values."""
        running = self.running.get(key)
        if running is None:
            running = self.running[key] = Running(array, norm=self.norm)
        running.add(array)

    def values(self):
        """Returns ``{reported key: float}``, one device-to-host copy per
        device."""
        keys = list(self.running)
        rows = _arrays.to_host([self.running[k].row() for k in keys])
        values = {}
        for key, row in zip(keys, rows):
            every = self.running[key].values(row)
            for statistic in self.statistics:
                values[self.key(*key, statistic)] = every[statistic]
        return values

    def reset(self):
        """Forgets every key's values."""
        self.running = {}


class Running(object):
    """Running values of one key: the element count and the number of
    arrays (Python ints), the shift (a Python float, or a 0-dim float64
    device array) and the rows."""

    __slots__ = ('count', 'calls', 'shift', 'rows', 'norm')

    def __init__(self, array, norm=False):
        self.count = 0
        self.calls = 0
        self.shift = _mean(array)
        self.rows = []
        self.norm = norm

    def add(self, array):
        """Adds the row of ``array`` (a non-empty floating-point array)."""
        self.count += array.size
        self.calls += 1
        rows = self.rows
        rows.append(_row(array, self.shift, self.norm))
        if len(rows) >= FOLD:
            rows[:] = [_fold(rows)]

    def row(self):
        """The folded row and the shift: one float64 array, on the device
        of the arrays (for :func:`~chainer_hookext._arrays.to_host`)."""
        row = _fold(self.rows)
        if isinstance(row, numpy.ndarray):
            return numpy.append(row, self.shift)
        return backend.get_array_module(row).concatenate(
            [row, self.shift[None]])

    def values(self, row):
        """``{statistic: float}`` from :meth:`row` copied to the host."""
        row = row.tolist()
        s, sq, lo, hi, zeros = row[:5]
        shift = row[-1]
        total = self.count
        mean = s / total  # of the values less the shift
        values = {
            'mean': shift + mean,
            'std': math.sqrt(max(sq / total - mean * mean, 0.0)),
            'min': lo, 'max': hi, 'zero_fraction': zeros / total}
        if self.norm:
            values['norm'] = row[5] / self.calls
        return values


def _mean(array):
    # The float64 mean of one array: a Python float for NumPy; a 0-dim
    # device array otherwise, without a sync.
    mean = array.sum(dtype=numpy.float64) / array.size
    return float(mean) if isinstance(array, numpy.ndarray) else mean


def _row(array, shift, norm):
    # The row of one array (see the module).
    xp = backend.get_array_module(array)
    flat = array.ravel()
    if norm:
        d = flat.astype(numpy.float64)
        if xp is not numpy:
            squares = xp.vdot(d, d)
        xp.subtract(d, shift, out=d)
    else:
        d = xp.subtract(flat, shift, dtype=numpy.float64)
    zeros = flat.size - xp.count_nonzero(flat)
    if xp is numpy:
        row = (float(d.sum()), float(numpy.dot(d, d)), float(flat.min()),
               float(flat.max()), float(zeros))
        return row + (_norm(flat, shift, row[0], row[1]),) if norm else row
    columns = [d.sum(), xp.vdot(d, d), flat.min().astype(numpy.float64),
               flat.max().astype(numpy.float64), zeros.astype(numpy.float64)]
    if norm:
        columns.append(xp.sqrt(squares))
    return xp.stack(columns)


def _norm(flat, shift, total, squares):
    # The L2 norm of ``flat`` (NumPy) from the sums of its values less
    # ``shift``: sum(x^2) = squares + shift * (2 * total + n * shift).  Its
    # rounding error scales with (sqrt(squares) + |shift| sqrt(n))^2, the
    # values' own dot product's with sum(x^2): taken when the first is at
    # most 4 times the second (always for the array that set the shift);
    # else (an array far smaller than the shift) that dot product.
    n = flat.size
    x2 = squares + shift * (2.0 * total + n * shift)
    bound = math.sqrt(squares) + abs(shift) * math.sqrt(n)
    if bound * bound <= 4.0 * x2:
        return math.sqrt(x2)
    d = flat.astype(numpy.float64)
    return math.sqrt(numpy.dot(d, d))


def _fold(rows):
    # Rows to one row (a float64 array on the rows' device): sums, min,
    # max, then sums again (zeros, norms).
    if isinstance(rows[0], tuple) or isinstance(rows[0], numpy.ndarray):
        xp = numpy
        m = numpy.array(rows, numpy.float64)
    else:
        xp = backend.get_array_module(rows[0])
        m = xp.stack(rows)
    return xp.concatenate([
        m[:, :2].sum(axis=0), m[:, 2:3].min(axis=0), m[:, 3:4].max(axis=0),
        m[:, 4:].sum(axis=0)])


def check_statistics(call, statistics, choices):
    """Returns ``statistics`` as a tuple of names of ``choices``.

    Raises:
        TypeError: Naming ``call``, when it is not a name or an iterable of
            names.
        ValueError: Naming ``call``, when it is empty or names one not in
            ``choices``.
    """
    what = 'pass a non-empty tuple of {}.'.format(
        ', '.join(map(repr, choices)))
    try:
        names = ((statistics,) if isinstance(statistics, str)
                 else tuple(statistics))
    except TypeError:
        names = None
    if names is None or not all(isinstance(s, str) for s in names):
        raise TypeError(
            '`{}(statistics={!r})` is not a name or names of statistics: '
            '{}'.format(call, statistics, what))
    if not names or any(s not in choices for s in names):
        raise ValueError(
            '`{}(statistics={!r})` is not a choice of statistics: {}'.format(
                call, statistics, what))
    return names

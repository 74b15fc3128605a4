"""Running statistics of arrays, by key, without keeping the arrays: what
``ActivationStatisticsHook`` and ``GradientStatisticsHook`` accumulate
(docs/debugging.md, "`ActivationStatistics`"); NumPy here, CuPy in
:mod:`._device_statistics`.
"""

import collections
import math

import numpy

from chainer_hookext import _arrays
from chainer_hookext.link_hooks import _device_statistics


#: Per-call rows kept before they are folded into one (NumPy).
FOLD = 64

#: A key's sums (in this order on the device too): ``sum`` and ``squares``
#: less ``shift``, its first array's mean (no variance lost to a large
#: mean); ``norms``, the sum of each array's L2 norm.
Row = collections.namedtuple(
    'Row', ('sum', 'squares', 'min', 'max', 'zeros', 'norms', 'shift'))


class Table:
    """One hook's running values by key; ``key`` makes reported keys."""

    def __init__(self, statistics, key, norm=False):
        self.statistics = statistics
        self.key = key
        self.norm = norm
        self.running = {}

    def add(self, key, array):
        """Adds ``array`` (non-empty, floating point) to ``key``'s values."""
        running = self.running.get(key)
        if running is None:
            running = self.running[key] = (
                Running(array, self.norm) if isinstance(array, numpy.ndarray)
                else _device_statistics.DeviceRunning(array))
        running.add(array)

    def values(self):
        """Returns ``{reported key: float}``: one host copy per device."""
        running = list(self.running.items())
        values = {}
        for (key, one), row in zip(running, _arrays.to_host(
                [one.row() for _, one in running])):
            every = figures(Row(*row.tolist()), one.count, one.calls)
            values.update((self.key(*key, s), every[s])
                          for s in self.statistics)
        return values

    def reset(self):
        """Forgets every key's values."""
        self.running = {}


def figures(row, count, calls):
    """``{statistic: float}`` of a Row: ``count`` values, ``calls`` arrays."""
    mean = row.sum / count  # of the values less the shift
    return {
        'mean': row.shift + mean,
        'std': math.sqrt(max(row.squares / count - mean * mean, 0.0)),
        'min': row.min, 'max': row.max, 'zero_fraction': row.zeros / count,
        'norm': row.norms / calls}


class Running:
    """Running values of one key of NumPy arrays."""

    __slots__ = ('count', 'calls', 'shift', 'rows', 'norm')

    def __init__(self, array, norm=False):
        self.count = 0
        self.calls = 0
        self.shift = float(array.sum(dtype=numpy.float64) / array.size)
        self.rows = []
        self.norm = norm

    def add(self, array):
        self.count += array.size
        self.calls += 1
        rows = self.rows
        rows.append(_row(array, self.shift, self.norm))
        if len(rows) >= FOLD:
            rows[:] = [_fold(rows)]

    def row(self):
        return numpy.append(_fold(self.rows), self.shift)


def _row(array, shift, norm):
    flat = array.ravel()
    d = numpy.subtract(flat, shift, dtype=numpy.float64)
    total = float(d.sum())
    squares = float(numpy.dot(d, d))
    if norm:
        # sum(x^2) from the shifted sums, unless its rounding error, ~(sqrt(
        # squares) + |shift| sqrt(n))^2, is over 4 sum(x^2): then a dot
        # product. Inline: a call would cost as much as these lines.
        n = flat.size
        x2 = squares + shift * (2.0 * total + n * shift)
        bound = math.sqrt(squares) + abs(shift) * math.sqrt(n)
        if bound * bound > 4.0 * x2:
            d = flat.astype(numpy.float64)
            x2 = numpy.dot(d, d)
    return (total, squares, float(flat.min()), float(flat.max()),
            float(flat.size - numpy.count_nonzero(flat)),
            math.sqrt(x2) if norm else 0.0)


def _fold(rows):
    m = numpy.array(rows, numpy.float64)
    return numpy.concatenate([
        m[:, :2].sum(axis=0), m[:, 2:3].min(axis=0), m[:, 3:4].max(axis=0),
        m[:, 4:].sum(axis=0)])


def check_statistics(call, statistics, choices):
    """Returns ``statistics`` as a tuple of names of ``choices``."""
    what = f"pass a non-empty tuple of {', '.join(map(repr, choices))}."
    try:
        names = ((statistics,) if isinstance(statistics, str)
                 else tuple(statistics))
    except TypeError:
        names = (None,)
    if not all(isinstance(s, str) for s in names):
        raise TypeError(
            f'`{call}(statistics={statistics!r})` is not a name or names of '
            f'statistics: {what}')
    if not names or any(s not in choices for s in names):
        raise ValueError(
            f'`{call}(statistics={statistics!r})` is not a choice of '
            f'statistics: {what}')
    return names

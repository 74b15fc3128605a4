import math

import numpy
from chainer import backend

from chainer_hookext import _arrays
from chainer_hookext.link_hooks import _output_hook
from chainer_hookext.report import keys as report_keys


STATISTICS = ('mean', 'std', 'min', 'max', 'zero_fraction')

# Per-call rows ([sum, sum of squares, min, max, zeros], of the values less
# the shift) kept before they are folded into one running row.
_FOLD = 64


class ActivationStatisticsHook(_output_hook.OutputHook):
    """Link hook that accumulates statistics of the links' forward outputs.

    For each floating-point array of each hooked link's output it computes,
    on the array's device and in float64, the sum and the sum of squares of
    the values less a shift (the mean of the first output of that key since
    :meth:`reset`, so that the variance's subtraction loses nothing when the
    mean is large beside the spread), the minimum, the maximum and the
    number of zeros, and adds them to running values, without keeping the
    array.  For CuPy arrays the running values stay on the device (no
    synchronisation per call: about 9 small kernels per array, and every 64
    calls a fold of the per-call rows); for NumPy they are Python floats.
    :meth:`statistics` computes, with one device-to-host copy per device,

    * ``mean``, ``std`` (population), ``min``, ``max``;
    * ``zero_fraction``: fraction of elements exactly zero (dead ReLUs).

    Keys are ``<link>/out/<statistic>`` for a single output, and
    ``<link>/out/<index or key>/<statistic>`` for each array of a tuple, list
    or dict output.  :class:`~chainer_hookext.ActivationStatistics` owns this
    hook in a trainer and names links ``main/predictor/l1``; without a trainer
    links are named after their parents (``MLP/l1``).

    Args:
        statistics (tuple of str): Which of :data:`STATISTICS` to return.
        train (bool): Accumulate while ``chainer.config.train`` is true.
        eval (bool): Accumulate while ``chainer.config.train`` is false.

    .. admonition:: Example

        >>> from chainer_hookext import ActivationStatisticsHook
        >>> hook = ActivationStatisticsHook(statistics=('mean', 'max'))
        >>> with hook:
        ...     _ = L.Linear(2, 1, initialW=1)(
        ...         numpy.array([[1, 2], [3, 4]], numpy.float32))
        >>> hook.statistics()
        {'Linear/out/mean': 5.0, 'Linear/out/max': 7.0}
    """

    name = 'ActivationStatisticsHook'

    def __init__(self, *, statistics=STATISTICS, train=True, eval=False):
        self.statistics_names = check_statistics(
            type(self).__name__, statistics)
        super().__init__(train=train, eval=eval)
        self._acc = {}  # {key: _Running}

    def process(self, name, args):
        for keys, array in _arrays.walk(args.out):
            if array.dtype.kind != 'f' or array.size == 0:
                continue
            key = name, keys  # the link's, where in its output
            acc = self._acc.get(key)
            if acc is None:
                acc = self._acc[key] = _Running(_mean(array))
            acc.count += array.size
            rows = acc.rows
            rows.append(_row(array, acc.shift))
            if len(rows) >= _FOLD:
                rows[:] = [_fold(rows)]

    def statistics(self):
        """Returns what was accumulated since :meth:`reset`.

        Returns:
            dict: ``{key: float}``, one device-to-host copy per device.
        """
        outputs = list(self._acc)
        rows = _arrays.to_host([_with_shift(self._acc[k]) for k in outputs])
        values = {}
        for key, row in zip(outputs, rows):
            total = self._acc[key].count
            s, sq, lo, hi, zeros, shift = row.tolist()
            mean = s / total  # of the values less the shift
            every = {
                'mean': shift + mean,
                'std': math.sqrt(max(sq / total - mean * mean, 0.0)),
                'min': lo, 'max': hi, 'zero_fraction': zeros / total}
            for stat in self.statistics_names:
                values[report_keys.activation_key(*key, stat)] = every[stat]
        return values

    def reset(self):
        """Forgets what was accumulated."""
        self._acc = {}


class _Running(object):
    """Running values of one key: the element count (a Python int), the
    shift (a Python float, or a 0-dim float64 device array) and the rows."""

    __slots__ = ('count', 'shift', 'rows')

    def __init__(self, shift):
        self.count = 0
        self.shift = shift
        self.rows = []


def _mean(array):
    # The float64 mean of one array: a Python float for NumPy; a 0-dim
    # device array otherwise, without a sync.
    mean = array.sum(dtype=numpy.float64) / array.size
    return float(mean) if isinstance(array, numpy.ndarray) else mean


def _row(array, shift):
    # [sum, sum of squares, min, max, zeros] of one array less ``shift``, in
    # float64: Python floats for NumPy; for a device array, one float64
    # device array, without a sync.
    xp = backend.get_array_module(array)
    flat = array.ravel()
    d = xp.subtract(flat, shift, dtype=numpy.float64)
    if xp is numpy:
        return (float(d.sum()), float(numpy.dot(d, d)),
                float(flat.min()), float(flat.max()),
                float(numpy.count_nonzero(flat == 0)))
    return xp.stack([
        d.sum(), xp.vdot(d, d), flat.min().astype(numpy.float64),
        flat.max().astype(numpy.float64),
        (flat == 0).sum(dtype=numpy.float64)])


def _fold(rows):
    # Rows to one row (a float64 array on the rows' device).
    if isinstance(rows[0], tuple) or isinstance(rows[0], numpy.ndarray):
        xp = numpy
        m = numpy.array(rows, numpy.float64)
    else:
        xp = backend.get_array_module(rows[0])
        m = xp.stack(rows)
    return xp.concatenate([
        m[:, :2].sum(axis=0), m[:, 2:3].min(axis=0), m[:, 3:4].max(axis=0),
        m[:, 4:].sum(axis=0)])


def _with_shift(acc):
    # The folded row of ``acc`` and its shift: one float64 array.
    row = _fold(acc.rows)
    if isinstance(row, numpy.ndarray):
        return numpy.append(row, acc.shift)
    return backend.get_array_module(row).concatenate([row, acc.shift[None]])


def check_statistics(call, statistics):
    """Returns ``statistics`` as a tuple of names of :data:`STATISTICS`.

    Raises:
        TypeError: Naming ``call``, when it is not a name or an iterable of
            names.
        ValueError: Naming ``call``, when it is empty or names one not in
            :data:`STATISTICS`.
    """
    what = 'pass a non-empty tuple of {}.'.format(
        ', '.join(map(repr, STATISTICS)))
    try:
        names = ((statistics,) if isinstance(statistics, str)
                 else tuple(statistics))
    except TypeError:
        names = None
    if names is None or not all(isinstance(s, str) for s in names):
        raise TypeError(
            '`{}(statistics={!r})` is not a name or names of statistics: '
            '{}'.format(call, statistics, what))
    if not names or any(s not in STATISTICS for s in names):
        raise ValueError(
            '`{}(statistics={!r})` is not a choice of statistics: {}'.format(
                call, statistics, what))
    return names

"""A link's place under the roofline: achieved FLOP/s against the peaks
(docs/flops.md, "The roofline").
"""

import collections
import warnings

from chainer_hookext.costs import peaks as peaks_module


#: Work below this percentage of the roof over its intensity is
#: overhead-bound: neither the FLOP/s nor the bytes/s of the machine hold
#: it back, but its Python and launch time.
OVERHEAD_PERCENT = 10.0

#: Where one link's work lies: ``flops`` and ``bytes`` counted, ``seconds``
#: measured, ``rate`` (FLOP/s), ``intensity`` (FLOPs per byte; ``None``
#: with no byte), ``percent`` of what its intensity can reach, ``bound``:
#: ``'compute'``, ``'memory'`` or ``'overhead'`` (below
#: :data:`OVERHEAD_PERCENT`), ``roof``: the roof over its intensity,
#: ``'compute'`` or ``'memory'``, and ``label``, the words to print:
#: ``'memory-bound'``, ``'overhead-bound (3% of the compute roof)'``.
Point = collections.namedtuple('Point', (
    'flops', 'bytes', 'seconds', 'rate', 'intensity', 'percent', 'bound',
    'roof', 'label'))


#: A link's :class:`Point` s, ``forward`` and ``backward`` (``None`` where
#: it has no timed work).
LinkPoints = collections.namedtuple('LinkPoints', ('forward', 'backward'))


class Roofline:
    """The two ceilings, raised when some work goes above them.

    Args:
        peaks (~.peaks.Peaks): FLOP/s and bytes/s.
        owner (str): Who names the peaks in a warning (e.g.
            ``'TimedLinks'``).

    Attributes:
        peaks (~.peaks.Peaks): The ceilings, as raised so far.
    """

    def __init__(self, peaks, owner):
        self.peaks = peaks_module.Peaks(float(peaks.flops),
                                        float(peaks.bandwidth))
        self.owner = owner
        self._warned = False

    @property
    def ridge(self):
        """The intensity (FLOPs per byte) where the two ceilings meet."""
        return self.peaks.flops / self.peaks.bandwidth

    def point(self, name, flops, bytes, seconds):
        """Returns the :class:`Point` of some work, or ``None`` untimed.

        Args:
            name (str): The work's name (a link's), for the warning.
            flops (int): FLOPs counted.
            bytes (int): Bytes moved.
            seconds (float): The time it took.
        """
        if seconds <= 0 or (flops <= 0 and bytes <= 0):
            return None
        rate, byte_rate = flops / seconds, bytes / seconds
        if rate > self.peaks.flops or byte_rate > self.peaks.bandwidth:
            self._raise(name, rate, byte_rate)
        intensity = flops / bytes if bytes > 0 else None
        roof = 'compute' if intensity is None or (
            intensity >= self.ridge) else 'memory'
        percent = 100.0 * max(rate / self.peaks.flops,
                              byte_rate / self.peaks.bandwidth)
        if percent < OVERHEAD_PERCENT:
            bound = 'overhead'
            label = f'overhead-bound ({percent:.2g}% of the {roof} roof)'
        else:
            bound, label = roof, f'{roof}-bound'
        return Point(flops, bytes, seconds, rate, intensity, percent, bound,
                     roof, label)

    def _raise(self, name, rate, byte_rate):
        old = self.peaks
        self.peaks = peaks_module.Peaks(
            max(old.flops, rate), max(old.bandwidth, byte_rate))
        if self._warned:
            return
        self._warned = True
        warnings.warn(
            f'{self.owner}: {name!r} ran at {rate:.3g} FLOP/s and '
            f'{byte_rate:.3g} bytes/s, above the peaks of {old.flops:.3g} '
            f'FLOP/s and {old.bandwidth:.3g} bytes/s: the peaks are raised '
            f'to what it achieved.  Pass `peak_flops=` and `peak_bandwidth=` '
            f'with the machine\'s own figures, or measure them again on an '
            f'idle machine: python -m chainer_hookext peaks.',
            RuntimeWarning)

    def link_points(self, entries):
        """Returns the :class:`LinkPoints` of each :class:`~.records.Entry`.

        Each link's inclusive FLOPs, bytes and time, forward and backward.

        Returns:
            collections.OrderedDict: ``{entry key: LinkPoints}``.
        """
        return collections.OrderedDict((e.key, LinkPoints(
            self.point(e.key, e.flops, e.bytes, e.elapsed_time),
            self.point(e.key + ' (backward)', e.backward_flops,
                       e.backward_bytes, e.backward_time)))
            for e in entries)

"""A link's place under the roofline: achieved FLOP/s against the peaks
(docs/flops.md, "The roofline")."""

import collections
import warnings

from chainer_hookext.costs import peaks as peaks_module


#: Below this percent of the roof over its intensity: overhead-bound.
OVERHEAD_PERCENT = 10.0

#: Where one link's work lies (``intensity`` ``None`` with no byte).
Point = collections.namedtuple('Point', (
    'flops', 'bytes', 'seconds', 'rate', 'intensity', 'percent', 'bound',
    'roof', 'label'))

#: A link's :class:`Point` s (``None`` without timed work).
LinkPoints = collections.namedtuple('LinkPoints', ('forward', 'backward'))


class Roofline:
    """The two ceilings, raised when some work goes above them.

    Args:
        peaks (~.peaks.Peaks): FLOP/s and bytes/s.
        owner (str): Who warns (``'TimedLinks'``).
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
        """The :class:`Point` of some work (``None`` untimed)."""
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
        bound = 'overhead' if percent < OVERHEAD_PERCENT else roof
        label = f'{roof}-bound' if bound == roof else (
            f'overhead-bound ({percent:.2g}% of the {roof} roof)')
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
        """``{key: LinkPoints}`` of ``Entry`` s' inclusive figures."""
        return collections.OrderedDict((e.key, LinkPoints(
            self.point(e.key, e.flops, e.bytes, e.elapsed_time),
            self.point(e.key + ' (backward)', e.backward_flops,
                       e.backward_bytes, e.backward_time)))
            for e in entries)

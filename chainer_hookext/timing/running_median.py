"""The median of the last values added, for ``Timeline``'s outlier traces
(docs/timing.md, "Outlier traces")."""

import bisect
import collections


class RunningMedian:
    """The median of the last ``size`` values added (a ``bisect`` each).

    .. admonition:: Example

        >>> median = RunningMedian(3)
        >>> for value in (4.0, 1.0, 3.0, 2.0):
        ...     median.add(value)
        >>> median.median(), len(median), median.values()
        (2.0, 3, [1.0, 3.0, 2.0])
    """

    __slots__ = ('_recent', '_sorted')

    def __init__(self, size: int):
        self._recent = collections.deque(maxlen=size)  # oldest first
        self._sorted = []  # the same values, sorted

    def __len__(self) -> int:
        return len(self._recent)

    def add(self, value: float) -> None:
        recent = self._recent
        if len(recent) == recent.maxlen:
            del self._sorted[bisect.bisect_left(self._sorted, recent[0])]
        recent.append(value)
        bisect.insort(self._sorted, value)

    def median(self):
        kept, n = self._sorted, len(self._sorted)
        if not n:
            return None
        return kept[n // 2] if n % 2 else (kept[n // 2 - 1] + kept[n // 2]) / 2

    def values(self) -> list:
        return list(self._recent)

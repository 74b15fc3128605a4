"""A window's events: the tracks, names and nesting a Perfetto user sees
(docs/timing.md, "`Timeline`: a trace of chosen iterations").
"""

import bisect
import collections

from chainer_hookext.memory import timeline as memory_timeline
from chainer_hookext.timing import pauses
from chainer_hookext.timing import phases
from chainer_hookext.timing import spans
from chainer_hookext.timing import trace


#: Device-time spans' thread id, less the process id (the loop's thread).
DEVICE_THREAD = 1000

#: What a window recorded, in clock seconds: ``iteration_starts``
#: ``[(number, start)]``, ``links`` a resolved :class:`~.spans.Recording`,
#: ``memory`` a ``memory.timeline.Recorded`` or ``None``.
Window = collections.namedtuple('Window', (
    'iteration_starts', 'end', 'phase_spans', 'links', 'gc_spans', 'pauses',
    'memory'), defaults=((), (), None))

#: A memory timeline's counter tracks and peak (docs/memory.md).
MEMORY_COUNTER = 'memory (bytes)'
ACTIVATIONS_COUNTER = 'activations by link (bytes)'
POOL_COUNTER = 'CuPy pool (bytes)'
MEMORY_PEAK = 'memory peak'

#: A link's backward span: ``steps`` consecutive steps, ``seconds`` in all.
BackwardRun = collections.namedtuple(
    'BackwardRun', ('name', 'start', 'end', 'steps', 'seconds'))

_Slice = collections.namedtuple('_Slice', (
    'name', 'category', 'start', 'end', 'args'))


def window_events(window, rank, device):
    """Returns the events of ``window`` for process ``rank + 1``;
    ``device``: the link spans are device times."""
    origin = window.iteration_starts[0][1]

    def ns(seconds):
        return int(round((seconds - origin) * 1e9))

    pid = loop_thread = rank + 1
    device_thread = DEVICE_THREAD + pid
    first, end = window.iteration_starts[0][1], window.end
    inside = [p for p in window.pauses if first <= p.start and p.end <= end]
    moved = pauses.PauseIndex(inside)  # they moved host-timed starts
    links = _links(window, ns, None if device else moved)
    parents = sorted(_phases(window, ns), key=lambda s: s.start)
    ends = [s.end for s in parents]
    loop = (_iterations(window, ns) + parents + [
        _fit(s, parents, ends) for s in _collections(window, ns)] + [
            _Slice(p.name, 'extension', ns(p.start), ns(p.end), None)
            for p in inside])
    threads = {loop_thread: 'training loop'}
    if device:
        threads[device_thread] = 'device (CUDA events)'
    events = trace.metadata(pid, f'rank {rank}', threads) + [
        trace.complete(s.name, s.category, s.start, s.end, pid, tid, s.args)
        for tid, slices in ((loop_thread, loop), (
            device_thread if device else loop_thread, links))
        for s in slices]
    if window.memory is not None:
        events.extend(memory_events(window.memory, ns, pid, loop_thread))
    return events


def memory_events(memory, ns, pid, tid):
    """Returns the counter events of ``memory`` (only the values changed
    at each moment: Perfetto keeps a value until its next) and the instant
    event at its peak on thread ``tid``; ``ns``: clock seconds to the
    trace's nanoseconds."""
    events = []
    for moment in memory.moments:
        ts = trace.microseconds(ns(moment.seconds))
        for name, values in ((MEMORY_COUNTER, moment.categories),
                             (ACTIVATIONS_COUNTER, moment.tops),
                             (POOL_COUNTER, moment.pool)):
            if values:
                events.append({'name': name, 'ph': 'C', 'pid': pid,
                               'ts': ts, 'args': values})
    peak = memory.peak
    if peak is not None and memory.peak_seconds is not None:
        sample = peak.point.sample
        events.append({
            'name': MEMORY_PEAK, 'cat': 'memory', 'ph': 'i', 's': 't',
            'pid': pid, 'tid': tid,
            'ts': trace.microseconds(ns(memory.peak_seconds)),
            'args': {'total': peak.point.total, 'phase': sample.kind,
                     'where': memory_timeline.where_of(sample),
                     'categories': peak.point.categories,
                     'holders': [{'category': c, 'holder': h, 'bytes': n}
                                 for c, h, n in peak.holders],
                     'pool_peak': peak.pool}})
    return events


def _iterations(window, ns):
    starts = window.iteration_starts + [(None, window.end)]
    return [_Slice(f'iteration {number}', 'iteration', ns(start),
                   ns(stop), None)
            for (number, start), (_, stop) in zip(starts, starts[1:])]


def _phases(window, ns):
    first, end = window.iteration_starts[0][1], window.end
    return [_Slice(getattr(s.phase, 'name', s.phase),
                   'extension' if isinstance(s.phase, phases.ExtensionPhase)
                   else 'phase', ns(s.start), ns(s.end), None)
            for s in window.phase_spans
            if s.phase != phases.OTHER and first <= s.start and s.end <= end]


def _collections(window, ns):
    first, end = window.iteration_starts[0][1], window.end
    return [_Slice(f'gc (generation {span.generation})', 'gc',
                   ns(span.start), ns(span.end),
                   {'generation': span.generation,
                    'collected': span.collected})
            for span in window.gc_spans
            if first <= span.start and span.end <= end]


def _links(window, ns, index):
    # index: the PauseIndex of host-timed spans, else None.
    def real(span):
        if index is None:
            return span
        start = index.start(span.start, span.end)
        return span if start == span.start else span._replace(start=start)
    slices = []
    for span in map(real, window.links.forward):
        name = spans.name_of(span.record)
        slices.append(_Slice(name, 'link_forward', ns(span.start),
                             ns(span.end), {'link': name}))
    phase_starts = sorted(s.start for s in window.phase_spans)
    steps = window.links.backward
    for run in backward_runs([real(s) for s in steps], phase_starts,
                             [s.end - s.start for s in steps]):
        start, end = ns(run.start), ns(run.end)
        busy = int(round(run.seconds * 1e9))
        slices.append(_Slice(
            run.name + ' (backward)', 'link_backward', start, end, {
                'link': run.name, 'steps': run.steps, 'steps_ns': busy,
                'share': round(busy / (end - start), 4) if end > start
                else 1.0}))
    for span in map(real, window.links.functions):
        slices.append(_Slice(
            span.function + (' (backward)' if span.backward else ''),
            'function_' + ('backward' if span.backward else 'forward'),
            ns(span.start), ns(span.end),
            {'link': spans.name_of(span.record)}))
    return slices


def backward_runs(steps, phase_starts, seconds):
    """Joins consecutive steps of one link (:class:`~.spans.Span`, each
    of its own ``seconds``) into one :class:`BackwardRun`, never over a
    phase's start (``phase_starts`` sorted)."""
    runs = []
    for step, own in zip(steps, seconds):
        name, start, end = spans.name_of(step.record), step.start, step.end
        if runs and runs[-1].name == name and bisect.bisect_right(
                phase_starts, runs[-1].end) == bisect.bisect_right(
                    phase_starts, start):  # no phase started between
            last = runs[-1]
            runs[-1] = last._replace(end=end, steps=last.steps + 1,
                                     seconds=last.seconds + own)
        else:
            runs.append(BackwardRun(name, start, end, 1, own))
    return runs


def _fit(child, parents, ends):
    # A collection cut to the phase holding its start (link spans need
    # none: same clock reads as phases).
    i = bisect.bisect_right(ends, child.start)  # start <= it < end
    if i == len(parents) or parents[i].start > child.start:
        return child
    parent = parents[i]
    start = max(child.start, parent.start)
    end = max(min(child.end, parent.end), start)
    if (start, end) == (child.start, child.end):
        return child
    args = dict(child.args or {})
    args['fitted_ns'] = (child.end - child.start) - (end - start)
    return child._replace(start=start, end=end, args=args)


def shift(events, ns):
    """Moves every span of ``events`` by ``ns`` nanoseconds."""
    return [trace.shifted(e, ns) for e in events]

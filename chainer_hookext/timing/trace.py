"""Trace Event Format files for Perfetto, integer nanoseconds written as
microseconds it reads back exactly (docs/timing.md, "`Timeline`: a trace of
chosen iterations", Times).
"""

import gzip
import json
import math
import os

from chainer_hookext import _files


def microseconds(ns):
    """Returns ``ns`` in microseconds: a float whose ``int(value * 1000.0)``
    is ``ns``."""
    value = ns / 1000
    while int(value * 1000.0) < ns:
        value = math.nextafter(value, math.inf)
    return value


def complete(name, category, start, end, pid, tid, args=None):
    """Returns one span's event; ``start`` and ``end`` integers of ns."""
    event = {'name': name, 'cat': category, 'ph': 'X', 'pid': pid,
             'tid': tid, 'ts': microseconds(start),
             'dur': microseconds(max(end - start, 0))}
    if args:
        event['args'] = args
    return event


def shifted(event, ns):
    """Returns ``event`` moved by ``ns`` nanoseconds."""
    if event.get('ph') not in ('X', 'C', 'i'):
        return event
    start = int(round(event['ts'] * 1000)) + ns
    return dict(event, ts=microseconds(start))


def metadata(pid, process, threads):
    """Returns the events naming process ``pid`` and its ``{tid: name}``."""
    events = [
        {'name': 'process_name', 'ph': 'M', 'pid': pid, 'tid': 0,
         'args': {'name': process}},
        {'name': 'process_sort_index', 'ph': 'M', 'pid': pid, 'tid': 0,
         'args': {'sort_index': pid}}]
    for tid, name in threads.items():
        events.append({'name': 'thread_name', 'ph': 'M', 'pid': pid,
                       'tid': tid, 'args': {'name': name}})
        events.append({'name': 'thread_sort_index', 'ph': 'M', 'pid': pid,
                       'tid': tid, 'args': {'sort_index': tid}})
    return events


def write(path, events, compress=True, other=None):
    """Writes ``{'traceEvents': events}`` to ``path``, whole or not at
    all, ``other`` as ``otherData``; ``False`` when ``path`` exists."""
    if os.path.lexists(path):
        return False
    # allow_nan=False: one NaN makes Perfetto refuse the whole file; no
    # event holds itself (check_circular=False: a tenth of the time).
    trace = {'traceEvents': events, 'displayTimeUnit': 'ms'}
    if other is not None:
        trace['otherData'] = other
    data = json.dumps(trace, separators=(',', ':'), allow_nan=False,
                      check_circular=False).encode('utf-8')
    # Level 3: 0.4 times the time of zlib's default 6 for 16% more bytes
    # on a trace (benchmarks/README.md, "Memory timeline").
    _files.write_atomic(path, gzip.compress(data, compresslevel=3)
                        if compress else data)
    return True


def read(path, other=False):
    """Returns the events of a file :func:`write` wrote; with ``other``,
    ``(events, otherData)`` (``None`` when it has none)."""
    with (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
        trace = json.loads(f.read().decode('utf-8'))
    if other:
        return trace['traceEvents'], trace.get('otherData')
    return trace['traceEvents']

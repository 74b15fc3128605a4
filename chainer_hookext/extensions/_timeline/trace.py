"""A window's spans as a Trace Event Format file.

The format of chrome://tracing and Perfetto (ui.perfetto.dev): a JSON
object with ``traceEvents``, each span a complete event (``"ph": "X"``)
with its start ``ts`` and length ``dur`` in microseconds, nested by time
within one process (``pid``: the ChainerMN rank) and thread; metadata
events name them.  :func:`write` writes the file aside, then renames it:
a killed run never leaves a truncated trace.
"""

import gzip
import json
import os


def complete(name, category, start, end, origin, pid, args=None):
    """Returns one span's event; times in seconds, ``origin`` at 0."""
    event = {'name': name, 'cat': category, 'ph': 'X', 'pid': pid,
             'tid': 0, 'ts': round((start - origin) * 1e6, 3),
             'dur': round(max(end - start, 0.0) * 1e6, 3)}
    if args:
        event['args'] = args
    return event


def metadata(pid, process):
    """Returns the events naming process ``pid`` and its thread."""
    return [
        {'name': 'process_name', 'ph': 'M', 'pid': pid, 'tid': 0,
         'args': {'name': process}},
        {'name': 'process_sort_index', 'ph': 'M', 'pid': pid, 'tid': 0,
         'args': {'sort_index': pid}},
        {'name': 'thread_name', 'ph': 'M', 'pid': pid, 'tid': 0,
         'args': {'name': 'training loop'}},
    ]


def write(path, events, compress=True):
    """Writes ``{'traceEvents': events}`` to ``path``, whole or not at all.

    Returns:
        bool: ``False`` when ``path`` exists already (never overwritten).
    """
    if os.path.exists(path):
        return False
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    data = json.dumps({'traceEvents': events, 'displayTimeUnit': 'ms'},
                      separators=(',', ':')).encode('utf-8')
    aside = '{}.{}.tmp'.format(path, os.getpid())
    try:
        with (gzip.open if compress else open)(aside, 'wb') as f:
            f.write(data)
        os.replace(aside, path)
    finally:
        if os.path.exists(aside):
            os.remove(aside)
    return True


def read(path):
    """Returns the events of a file :func:`write` wrote."""
    with (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
        return json.loads(f.read().decode('utf-8'))['traceEvents']

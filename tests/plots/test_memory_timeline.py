"""A traced iteration's memory over time: read from a Timeline file,
stacked by category, the peak marked where it happened."""

import pytest

from chainer_hookext.plots import _memory_timeline
from chainer_hookext.profile import run as run_module
from chainer_hookext.timing import trace
from chainer_hookext.timing import trace_events
from tests.conftest import assert_png

pytest.importorskip('matplotlib')


def counter(ms, activations, pool=None):
    """The ``memory (bytes)`` counter at ``ms`` milliseconds."""
    events = [{'name': trace_events.MEMORY_COUNTER, 'cat': 'memory',
               'ph': 'C', 'pid': 1, 'ts': ms * 1000.0, 'args': {
                   'params': 100, 'grads': 100, 'optimizer_state': 200,
                   'activations': activations}}]
    if pool is not None:
        events.append({'name': trace_events.POOL_COUNTER, 'cat': 'memory',
                       'ph': 'C', 'pid': 1, 'ts': ms * 1000.0,
                       'args': {'used': pool, 'held': 2 * pool}})
    return events


def write_trace(tmp_path, memory=True, pool=False):
    """Two iterations of 10 ms; the peak at 14 ms, in the second."""
    events = [trace.complete(f'iteration {n}', 'iteration', start * 10 ** 6,
                             (start + 10) * 10 ** 6, 1, 1)
              for n, start in ((5, 0), (6, 10))]
    if memory:
        for ms, activations in ((2, 50), (4, 80), (12, 60), (14, 90),
                                (17, 0)):
            events += counter(ms, activations,
                              activations + 1000 if pool else None)
        events.append({
            'name': trace_events.MEMORY_PEAK, 'cat': 'memory', 'ph': 'i',
            's': 't', 'pid': 1, 'tid': 1, 'ts': 14000.0, 'args': {
                'total': 490, 'phase': 'forward', 'where': 'main$x$',
                'holders': [{'category': 'optimizer_state',
                             'holder': 'main/l1', 'bytes': 200}]}})
    path = str(tmp_path / 'iteration_5.json.gz')
    trace.write(path, events)
    return path


def test_the_iteration_holding_the_peak_is_read(tmp_path):
    memory = run_module.memory_trace(write_trace(tmp_path))
    assert memory.iteration == 'iteration 6'
    assert memory.end_ms == 10
    assert [(p.ms, p.total) for p in memory.points] == [
        (2, 460), (4, 490), (7, 400)]
    assert memory.peak.ms == 4 and memory.peak.total == 490
    assert memory.peak.where == 'main$x$'


def test_values_carried_from_the_events_before(tmp_path):
    # As Timeline writes them: the first event carries every value, the
    # others what changed.
    def event(name, ms, **args):
        return {'name': name, 'ph': 'C', 'pid': 1, 'ts': ms * 1000.0,
                'args': args}
    memory, pool = trace_events.MEMORY_COUNTER, trace_events.POOL_COUNTER
    events = [trace.complete(f'iteration {n}', 'iteration', start * 10 ** 6,
                             (start + 10) * 10 ** 6, 1, 1)
              for n, start in ((5, 0), (6, 10))] + [
        event(memory, 2, params=100, grads=100, optimizer_state=200,
              activations=50),
        event(pool, 2, used=1000, held=4000),
        event(memory, 4, activations=80),
        event(memory, 12, activations=60, grads=0),
        event(pool, 12, used=1100),
        event(memory, 14, activations=90, grads=100),
        event(pool, 14, used=1200, held=5000),
        event(memory, 17, activations=0),
        {'name': trace_events.MEMORY_PEAK, 'ph': 'i', 's': 't', 'pid': 1,
         'tid': 1, 'ts': 14000.0, 'args': {'total': 490}}]
    # A second rank's (ChainerMN), on its own process: not mixed in.
    events += [dict(e, pid=2, args={name: n + 7 for name, n in
                                    e['args'].items()})
               if e['ph'] == 'C' else dict(e, pid=2) for e in events]
    path = str(tmp_path / 'iteration_5.json.gz')
    trace.write(path, events)
    read = run_module.memory_trace(path)
    assert [(p.ms, p.total, p.pool_used) for p in read.points] == [
        (2, 360, 1100), (4, 490, 1200), (7, 400, 1200)]
    assert read.points[1].categories == {
        'params': 100, 'grads': 100, 'optimizer_state': 200,
        'activations': 90}


def test_no_counter_no_memory(tmp_path):
    assert run_module.memory_trace(write_trace(tmp_path, False)) is None


@pytest.mark.parametrize('pool', [False, True])
def test_stacked_and_the_peak_marked_at_its_time(tmp_path, pool):
    memory = run_module.memory_trace(write_trace(tmp_path, pool=pool))
    figure = _memory_timeline.memory_timeline(memory)
    assert_png(figure)
    ax, = figure.axes
    line, = [one for one in ax.lines
             if one.get_gid() == _memory_timeline.PEAK_GID]
    assert list(line.get_xdata()) == [4, 4]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:4] == ['parameters', 'gradients', 'optimizer state',
                          'activations']
    assert ('CuPy pool (used)' in labels) == pool
    # The user's text escaped: no mathematics drawn from `$x$`.
    assert any(r'main\$x\$' in t.get_text() for t in ax.texts)

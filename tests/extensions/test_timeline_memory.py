"""Timeline(memory=True): counter tracks of the bytes alive, the peak."""

import glob
import os

import chainer
import pytest

import chainer_hookext
from chainer_hookext.timing import trace
from chainer_hookext.timing import trace_events
from tests.conftest import make_trainer
from tests.conftest import registered_hooks


def traced(tmp_path, memory=True, **kwargs):
    trainer = make_trainer(str(tmp_path), stop=(4, 'iteration'), **kwargs)
    trainer.extend(chainer_hookext.Timeline(iterations=2, memory=memory),
                   trigger=(2, 'iteration'))
    trainer.run()
    path, = glob.glob(os.path.join(str(tmp_path), 'timeline', '*.json.gz'))
    return trainer, trace.read(path)


def test_memory_argument_is_checked():
    with pytest.raises(TypeError, match=r'Timeline.*memory.*1'):
        chainer_hookext.Timeline(memory=1)


def test_counters_and_peak_in_the_trace(tmp_path):
    trainer, events = traced(tmp_path)
    counters = [e for e in events if e.get('ph') == 'C']
    names = {e['name'] for e in counters}
    assert trace_events.MEMORY_COUNTER in names
    assert trace_events.ACTIVATIONS_COUNTER in names
    by_category = [e for e in counters
                   if e['name'] == trace_events.MEMORY_COUNTER]
    # The first event carries every category, the others what changed.
    assert set(by_category[0]['args']) == {
        'params', 'grads', 'optimizer_state', 'activations'}
    values = [dict(by_category[0]['args'])]
    for e in by_category[1:]:
        assert e['args'] and all(
            values[-1][name] != n for name, n in e['args'].items())
        values.append(dict(values[-1], **e['args']))
    params = sum(p.array.nbytes for p in
                 trainer.updater.get_optimizer('main').target.params())
    assert all(v['params'] == params for v in values)
    # Every top-level link has a value from the window's first moment.
    by_link = [e['args'] for e in counters
               if e['name'] == trace_events.ACTIVATIONS_COUNTER]
    assert set(by_link[0]) == set().union(*by_link)
    # Inside the window's iterations, in time order.
    spans = [e for e in events if e.get('ph') == 'X']
    first = min(e['ts'] for e in spans)
    last = max(e['ts'] + e['dur'] for e in spans)
    times = [e['ts'] for e in by_category]
    assert times == sorted(times)
    assert first <= times[0] and times[-1] <= last * (1 + 1e-12)
    peak, = [e for e in events if e.get('ph') == 'i']
    assert peak['name'] == trace_events.MEMORY_PEAK
    assert peak['args']['total'] == max(sum(v.values()) for v in values)
    assert len(peak['args']['holders']) == 5


def test_no_counter_without_memory(tmp_path):
    _, events = traced(tmp_path, memory=False)
    assert not [e for e in events if e.get('ph') in ('C', 'i')]


def test_nothing_registered_after_the_window(tmp_path):
    trainer, _ = traced(tmp_path)
    model = trainer.updater.get_optimizer('main').target
    assert not registered_hooks(model)
    assert not chainer.get_function_hooks()


def test_link_memory_reports_the_peak(tmp_path, capsys):
    trainer = make_trainer(str(tmp_path), stop=(2, 'iteration'))
    memory = chainer_hookext.LinkMemory(print_report=True, peak=True)
    trainer.extend(memory, trigger=(2, 'iteration'))
    seen = []
    trainer.extend(lambda t: seen.append(
        dict(t.observation)), trigger=(2, 'iteration'),
        priority=chainer.training.PRIORITY_READER)
    trainer.run()
    observed = seen[-1]
    categories = ('params', 'grads', 'optimizer_state', 'activations')
    assert observed['memory/peak'] == sum(
        observed[f'memory/peak/{c}'] for c in categories)
    peak = memory.peak_summary()
    assert peak['bytes'] == observed['memory/peak']
    assert peak['phase'] in ('forward', 'backward', 'end')
    assert len(peak['holders']) == 5
    assert sum(n for _, _, n in peak['holders']) <= peak['bytes']
    assert 'Peak ' in capsys.readouterr().out


@pytest.mark.gpu
def test_gpu_peak_is_the_pools(tmp_path):
    # The peak against the pool's own used bytes, read at every malloc by
    # a hook of the test's.
    import cupy
    from cupy.cuda import memory_hook

    pool = cupy.get_default_memory_pool()
    highest = [pool.used_bytes()]

    class Used(memory_hook.MemoryHook):
        name = 'Used'

        def malloc_postprocess(self, device_id, size, mem_size, mem_ptr,
                               pmem_id):
            highest[0] = max(highest[0], pool.used_bytes())

    # One iteration, the one measured: the run's highest is its own.
    trainer = make_trainer(str(tmp_path), stop=(1, 'iteration'), device=0)
    memory = chainer_hookext.LinkMemory(peak=True)
    trainer.extend(memory, trigger=(1, 'iteration'))
    with Used():
        trainer.run()
    assert memory.peak_summary()['bytes'] == pytest.approx(
        highest[0], rel=0.01)


@pytest.mark.gpu
def test_gpu_pool_counters_in_the_trace(tmp_path):
    _, events = traced(tmp_path, device=0)
    pool = [e for e in events if e.get('ph') == 'C'
            and e['name'] == trace_events.POOL_COUNTER]
    assert pool and all(
        0 < e['args']['used'] <= e['args']['held'] for e in pool)

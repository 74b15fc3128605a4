"""Our own work is ours: pauses taken out of links, steps and phases."""

import gzip
import json
import threading

import pytest
from chainer.training import extensions

from chainer_hookext import LinkMemory
from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from chainer_hookext import Timeline
from chainer_hookext.memory import graph
from chainer_hookext.memory import tracer as tracer_module
from chainer_hookext.timing import pauses
from tests.conftest import BACKWARD
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import OPTIMIZER
from tests.conftest import make_slow_trainer


# LinkMemory's work on the still clock, exact in binary: its graph read at
# the backward's first step, and its books per function node.
WALK, PER_NODE = 64.0, 0.5
USER_PHASES = ['time/loop/' + phase for phase in (
    'data', 'forward', 'backward', 'optimizer', 'other')]


# -- the index of a window's pauses ---------------------------------------

def test_start_gives_back_where_a_moved_call_started():
    index = pauses.PauseIndex([pauses.Pause('a', 10.0, 12.0),
                               pauses.Pause('a', 15.0, 16.0)])
    # A call from 5 to 20 around both pauses was moved by 3.
    assert index.start(8.0, 20.0) == 5.0
    # From 13 to 20, around the second only; from 5 to 9, around none.
    assert index.start(14.0, 20.0) == 13.0
    assert index.start(5.0, 9.0) == 5.0
    assert pauses.PauseIndex([]).start(7.0, 9.0) == 7.0


def test_cut_leaves_the_pauses_out():
    index = pauses.PauseIndex([pauses.Pause('a', 10, 12),
                               pauses.Pause('a', 15, 16)])
    assert index.cut(5, 20) == [(5, 10), (12, 15), (16, 20)]
    assert index.cut(12, 14) == [(12, 14)]
    assert index.cut(0, 5) == [(0, 5)]
    assert index.cut(10, 12) == [(12, 12)]  # inside a pause: empty


# -- listeners ---------------------------------------------------------------

class Listener:
    def __init__(self):
        self.heard = []

    def paused(self, name, start, end):
        self.heard.append((name, start, end))


def test_listeners_hear_their_thread_only(still):
    listener = Listener()
    handle = pauses.listen(listener)
    try:
        assert pauses.listen(listener) == handle  # once
        with pauses.own_work('X'):
            still.sleep(2.0)

        def elsewhere():
            pauses.paused('Y', 0.0, 1.0)
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    finally:
        pauses.stop_listening(handle)
    pauses.paused('Z', 5.0, 6.0)
    pauses.stop_listening(handle)  # again: nothing
    pauses.stop_listening(None)
    assert listener.heard == [('X', 0.0, 2.0)]


def test_a_copy_of_the_handle_listens_to_nothing():
    import copy
    import pickle
    listener = Listener()
    handle = pauses.listen(listener)
    try:
        assert copy.deepcopy(handle) is None
        assert pickle.loads(pickle.dumps(handle)) is None
    finally:
        pauses.stop_listening(handle)


# -- LinkMemory's work in a training ---------------------------------------

@pytest.fixture
def slow_link_memory(monkeypatch, still):
    """LinkMemory's graph read takes WALK seconds and its books PER_NODE
    seconds per function node."""
    kept_buffers = graph.kept_buffers
    node_created = tracer_module.MemoryTracer.node_created

    def slow_kept_buffers(*args, **kwargs):
        still.sleep(WALK)
        return kept_buffers(*args, **kwargs)

    def slow_node_created(self, *args):
        still.sleep(PER_NODE)
        return node_created(self, *args)
    monkeypatch.setattr(graph, 'kept_buffers', slow_kept_buffers)
    monkeypatch.setattr(tracer_module.MemoryTracer, 'node_created',
                        slow_node_created)


def run(still, tmp_path, memory, timeline=False):
    # Four iterations; reports every two; LinkMemory measures the first
    # iteration after each report (1 and 3).
    trainer = make_slow_trainer(still, tmp_path)
    trainer.extend(TimedLinks(), trigger=(2, 'iteration'))
    trainer.extend(TimedLoop(), trigger=(2, 'iteration'))
    if memory:
        trainer.extend(LinkMemory(), trigger=(2, 'iteration'))
    if timeline:
        trainer.extend(Timeline(iterations=1), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.run()
    return trainer, trainer.get_extension('LogReport').log


def test_link_memory_leaves_links_and_phases_as_without_it(
        still, tmp_path, slow_link_memory):
    _, without = run(still, tmp_path / 'without', memory=False)
    _, log = run(still, tmp_path / 'with', memory=True)
    for plain, measured in zip(without, log):
        for key, value in plain.items():  # every link's, every phase's
            if key.startswith('time/') and not key.startswith(
                    'time/loop/') or key in USER_PHASES:
                assert measured[key] == value, key
    # The user's phases are their sleeps, exactly.
    for entry in log:
        assert entry['time/loop/data'] == DATA
        assert entry['time/loop/forward'] == FORWARD
        assert entry['time/loop/backward'] == BACKWARD
        assert entry['time/loop/optimizer'] == OPTIMIZER
        assert entry['time/main/backward/self'] == BACKWARD
    # LinkMemory's work is its own: one measured iteration per interval,
    # its graph read and its books for each node, per iteration.
    nodes = len(graph_nodes_of_one_iteration(still, tmp_path))
    for plain, measured in zip(without, log):
        grown = (measured['time/loop/iteration']
                 - plain['time/loop/iteration'])
        assert grown == (WALK + nodes * PER_NODE) / 2
        assert measured['time/loop/extension/LinkMemory'] >= grown


def graph_nodes_of_one_iteration(still, tmp_path):
    # The function nodes LinkMemory keeps books of in one iteration.
    created = []
    original = tracer_module.MemoryTracer.node_created

    def count(self, node, in_data):
        created.append(node)
        return original(self, node, in_data)
    tracer_module.MemoryTracer.node_created = count
    try:
        trainer = make_slow_trainer(still, tmp_path / 'count', stop=1)
        trainer.extend(LinkMemory(), trigger=(1, 'iteration'))
        trainer.run()
    finally:
        tracer_module.MemoryTracer.node_created = original
    return created


def test_a_trace_holds_none_of_link_memorys_work(
        still, tmp_path, slow_link_memory):
    # LinkMemory, armed at iteration 2, leaves the window's iteration 3 and
    # the one after it alone: nothing of its work in the trace, no cut.
    trainer, _ = run(still, tmp_path, memory=True, timeline=True)
    [path] = trainer.get_extension('Timeline').written
    with gzip.open(path, 'rt') as f:
        events = [e for e in json.load(f)['traceEvents'] if e['ph'] == 'X']
    assert not [e for e in events if e['cat'] == 'extension'
                and e['name'] == 'LinkMemory']
    assert not [e for e in events if 'piece' in (e.get('args') or {})]
    backward = sum(e['dur'] for e in events if e['name'] == 'backward')
    assert backward == BACKWARD * 1e6

"""Timeline(functions=True): a span per function node and backward step."""

import pytest

from chainer_hookext import TimedLinks
from chainer_hookext import Timeline
from tests.conftest import BACKWARD
from tests.conftest import FORWARD
from tests.conftest import make_slow_trainer
from tests.conftest import make_trainer
from tests.extensions.test_timeline import assert_nested_per_thread
from tests.extensions.test_timeline import parent_of
from tests.extensions.test_timeline import run_with_timeline
from tests.extensions.test_timeline import spans
from tests.extensions.test_timeline_reads import UPDATERS
from tests.extensions.test_timeline_reads import trainer_with


def test_known_delays(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=4)
    _, files = run_with_timeline(trainer, iterations=2, functions=True)
    events = files['iteration_3.json.gz']
    forward = [e for e in spans(events, 'function_forward')
               if e['name'] == 'SlowNode']
    backward = [e for e in spans(events, 'function_backward')
                if e['name'] == 'SlowNode (backward)']
    # Two nodes an iteration, the first's input the batch: no step.
    assert sorted(e['dur'] for e in forward) == [0, 0] + [FORWARD * 1e6] * 2
    assert [e['dur'] for e in backward] == [BACKWARD * 1e6] * 2
    assert {e['args']['link'] for e in forward + backward} == {'main'}


@pytest.mark.parametrize('updater', sorted(UPDATERS))
@pytest.mark.parametrize('timed_links', [None, 'with functions',
                                         'without'])
def test_nested_in_their_link(clock, tmp_path, updater, timed_links):
    trainer = trainer_with(UPDATERS[updater], tmp_path)
    timed = None
    if timed_links is not None:
        timed = TimedLinks(functions=timed_links == 'with functions')
        trainer.extend(timed, trigger=(2, 'iteration'))
    timeline, files = run_with_timeline(trainer, iterations=2,
                                        functions=True)
    # TimedLinks' timer serves when it splits by function type.
    assert (timeline._timer.total_calls() == 0) == (
        timed_links == 'with functions')
    events = [e for name in files for e in files[name]]
    assert_nested_per_thread(events)
    links = spans(events, 'link_forward')
    runs = spans(events, 'link_backward')
    forward = spans(events, 'function_forward')
    backward = spans(events, 'function_backward')
    assert forward and backward
    for e in forward:
        if e['args']['link'] == '(outside)':
            continue
        parent = parent_of(e, links)
        assert parent is not None and parent['name'] == e['args']['link'], e
    for e in backward:
        parent = parent_of(e, runs)
        assert parent is not None and parent['args']['link'] == (
            e['args']['link']), e


def test_off_by_default(tmp_path):
    trainer = make_trainer(tmp_path, stop=(4, 'iteration'))
    _, files = run_with_timeline(trainer, iterations=1)
    events = [e for name in files for e in files[name]]
    assert not spans(events, 'function_forward')
    with pytest.raises(TypeError, match='functions'):
        Timeline(functions=1)

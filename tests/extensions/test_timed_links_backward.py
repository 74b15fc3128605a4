"""TimedLinks(backward=...): per-link backward time in a trainer."""

import chainer
import chainer.functions as F
import chainer.links as L
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLinks
from tests.conftest import Boom
from tests.conftest import SleepBackward
from tests.conftest import raise_boom
from tests.conftest import registered_hooks
from tests.conftest import hook_keys


class SlowBackwardMLP(chainer.Chain):
    """l2's backward costs 10 ms more, the MLP's own 5 ms more."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 8)
            self.l2 = L.Linear(8, 3)
        self.l2.forward = self.slow_l2

    def slow_l2(self, x):
        y = L.Linear.forward(self.l2, x)
        return SleepBackward(0.010).apply((y,))[0]

    def forward(self, x):
        h = SleepBackward(0.005).apply((F.relu(self.l1(x)),))[0]
        return self.l2(h)


def function_hooks_seen(seen):
    """Records the thread's function hooks in each training iteration."""
    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        seen.append(hook_keys(chainer.get_function_hooks()))
    return look


def test_backward_charged_to_the_right_link(trainer_factory):
    trainer = trainer_factory(
        model=L.Classifier(SlowBackwardMLP()), stop=(3, 'iteration'))
    trainer.extend(TimedLinks(), trigger=(3, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(3, 'iteration')))
    trainer.run()
    entry = trainer.get_extension('LogReport').log[0]
    name = 'time/main/predictor'
    # Lower bounds only: a loaded machine makes real sleeps longer.
    assert 0.010 <= entry[name + '/l2/backward/self']
    assert 0.005 <= entry[name + '/backward/self']
    assert entry[name + '/l1/backward/self'] < entry[name + '/backward/self']
    assert entry[name + '/l2/backward'] == entry[
        name + '/l2/backward/self']
    assert entry[name + '/backward'] == pytest.approx(sum(
        entry[name + k + '/backward/self'] for k in ('', '/l1', '/l2')))
    assert entry['time/main/backward'] == pytest.approx(
        entry[name + '/backward'] + entry['time/main/backward/self'])
    # Forward is not charged with backward time.
    assert entry[name + '/l2'] < entry[name + '/l2/backward/self']


def test_function_hook_only_during_training(trainer_factory):
    trainer = trainer_factory()
    seen = []
    trainer.extend(TimedLinks())
    trainer.extend(function_hooks_seen(seen))
    trainer.run()
    assert seen == [['chainer_hookext.TimedLinks_backward']] * 4
    assert chainer.get_function_hooks() == {}


def test_backward_false_registers_no_function_hook(trainer_factory):
    trainer = trainer_factory()
    seen = []
    ext = TimedLinks(backward=False, print_report=True)
    trainer.extend(ext)
    trainer.extend(function_hooks_seen(seen))
    trainer.extend(extensions.LogReport())
    trainer.run()
    assert seen == [[]] * 4
    keys = trainer.get_extension('LogReport').log[0]
    assert [k for k in keys if 'backward' in k] == []
    assert ext.hook.total_backward_time() == 0


def break_forward(trainer):
    model = trainer.updater.get_optimizer('main').target
    model.predictor.l2.forward = raise_boom
    return Boom


def break_backward(trainer):
    model = trainer.updater.get_optimizer('main').target
    forward = model.predictor.l2.forward

    def forward_then_fail_backward(x):
        y = forward(x)
        node = SleepBackward(0)
        node.backward = raise_boom
        return node.apply((y,))[0]

    model.predictor.l2.forward = forward_then_fail_backward
    return Boom


def interrupt_in_extension(trainer):
    def interrupt(trainer):
        raise KeyboardInterrupt

    trainer.extend(interrupt, name='interrupt')
    return KeyboardInterrupt


def fail_other_initialize(trainer):
    class FailingInit(training.Extension):
        def initialize(self, trainer):
            raise Boom('initialize')

        def __call__(self, trainer):
            pass

    trainer.extend(FailingInit(), priority=-1000)
    return Boom


@pytest.mark.parametrize('breaker', [
    break_forward, break_backward, interrupt_in_extension,
    fail_other_initialize])
def test_function_hook_removed_on_every_exit(trainer_factory, breaker):
    trainer = trainer_factory()
    ext = TimedLinks()
    trainer.extend(ext)
    error = breaker(trainer)
    with pytest.raises(error):
        trainer.run(show_loop_exception_msg=False)
    assert chainer.get_function_hooks() == {}
    assert registered_hooks(trainer.updater.get_optimizer('main').target) == []


def test_outside_key_for_nodes_outside_the_timed_links(trainer_factory):
    trainer = trainer_factory(stop=(2, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    ext = TimedLinks(model.predictor, print_report=True, unit='us')
    trainer.extend(ext, trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.run()
    entry = trainer.get_extension('LogReport').log[0]
    # The loss is computed in the Classifier, outside the timed predictor.
    assert entry['time/(outside)/backward'] > 0
    assert 'time/main/backward' not in entry
    total = entry['time/(outside)/backward'] + entry[
        'time/main/predictor/backward']
    assert total * 2 == pytest.approx(ext.hook.total_backward_time('train'))


def test_outside_row_in_the_printed_table(trainer_factory, capsys):
    trainer = trainer_factory(stop=(2, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(TimedLinks(model.predictor, print_report=True, unit='us'),
                   trigger=(2, 'iteration'))
    trainer.run()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[2:]] == [
        'main/predictor', 'l1', 'l2', '(outside)']
    assert len(lines[-1].split()) == 3  # backward times only
    assert lines[-1].endswith('us')


class OneRank(object):
    """A communicator of one process (the real ones: tests/chainermn)."""

    rank = 0
    size = 1

    def gather_obj(self, obj, root=0):
        return [obj]


def test_comm_table_has_backward_columns(trainer_factory, capsys):
    trainer = trainer_factory(stop=(2, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(TimedLinks(model.predictor, comm=OneRank(),
                              print_report=True, unit='us'),
                   trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.run()
    entry = trainer.get_extension('LogReport').log[0]
    for key in ('time/main/predictor/backward',
                'time/main/predictor/l1/backward/self',
                'time/(outside)/backward'):
        assert entry[key + '/max'] == entry[key] > 0
        assert entry[key + '/slowest_rank'] == 0
    lines = capsys.readouterr().out.splitlines()
    # The columns come in as many blocks as fit 100 columns: how many
    # depends on the figures' widths.
    starts = [i for i, line in enumerate(lines) if line.startswith('LinkName')]
    header = [word for i in starts for word in lines[i].split()[1:]]
    assert header == ['Mean', 'Min', 'Max', 'SlowestRank', 'SelfMean',
                      'BackwardMean', 'BackwardSelfMean']
    for start, end in zip(starts, starts[1:] + [len(lines)]):
        rows = lines[start + 1:end]
        assert [row.split()[0] for row in rows] == [
            'main/predictor', 'l1', 'l2', '(outside)']
    assert lines[-1].split() == ['(outside)', lines[-1].split()[-1]]


class Named(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.backward = L.Linear(4, 3)

    def forward(self, x):
        return self.backward(x)


def test_link_named_backward(trainer_factory):
    trainer = trainer_factory(model=L.Classifier(Named()))
    trainer.extend(TimedLinks())
    with pytest.raises(ValueError, match="'main/predictor/backward' would "
                       'report .*backward=False'):
        trainer.run()
    trainer = trainer_factory(model=L.Classifier(Named()))
    trainer.extend(TimedLinks(backward=False))
    trainer.run()


def test_bad_arguments():
    with pytest.raises(TypeError, match=r'TimedLinks\(backward=1\)'):
        TimedLinks(backward=1)
    assert TimedLinks().hook.backward is True
    assert TimedLinks(backward=False).hook.backward is False

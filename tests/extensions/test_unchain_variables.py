import chainer
import chainer.functions as F
import numpy
import pytest
from chainer import training
from chainer.training import extensions

import chainer_hookext
from chainer_hookext import PRIORITY_LAST
from chainer_hookext import unchain_variables
from chainer_hookext import UnchainVariables
from chainer_hookext.extensions.unchain_variables import unchain_nested
from tests.conftest import MLP


class LoggingUnchain(UnchainVariables):
    """UnchainVariables that logs the iterations it is called in."""

    def __init__(self, log, **kwargs):
        super().__init__(**kwargs)
        self.log = log

    def __call__(self, trainer):
        self.log.append(('unchain', trainer.updater.iteration))
        super().__call__(trainer)


class NestedClassifier(chainer.Chain):
    """Reports its values nested in a dict, a list and a tuple only."""

    def __init__(self, predictor):
        super().__init__()
        with self.init_scope():
            self.predictor = predictor

    def forward(self, x, t):
        y = self.predictor(x)
        loss = F.softmax_cross_entropy(y, t)
        chainer.report({'losses': {
            'ce': loss, 'parts': [loss * 2, (F.sum(y),)]}}, self)
        return loss


def variables_in(value):
    """Every Variable of value, looking into lists, tuples and dicts."""
    if isinstance(value, chainer.Variable):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in variables_in(item)]
    return []


def spy(log, priority, name='spy'):
    """Records each iteration's Variables and whether they hold a graph."""
    seen = {}

    @training.make_extension(trigger=(1, 'iteration'), priority=priority)
    def record(trainer):
        log.append((name, trainer.updater.iteration))
        seen[trainer.updater.iteration] = [
            (v, v.creator_node is not None,
             chainer.backends.cuda.to_cpu(v.array).copy())
            for v in variables_in(trainer.observation)]

    return record, seen


def run(trainer, keep_graph):
    with chainer.using_config('keep_graph_on_report', keep_graph):
        trainer.run()


def unchain_calls(log):
    return [it for name, it in log if name == 'unchain']


def test_priority_last_is_below_chainer_builtins():
    assert UnchainVariables.priority == PRIORITY_LAST
    assert chainer_hookext.PRIORITY_LAST is PRIORITY_LAST
    assert unchain_variables is UnchainVariables
    for builtin in (extensions.snapshot(), extensions.unchain_variables(),
                    extensions.LogReport(), extensions.DumpGraph('x')):
        assert PRIORITY_LAST < builtin.priority
    assert PRIORITY_LAST < -500


def test_runs_after_snapshot_and_user_extension(trainer_factory):
    log = []
    trainer = trainer_factory(stop=(2, 'iteration'))

    def writer(filename, outdir, target, savefun=None):
        log.append(('snapshot', trainer.updater.iteration))

    late, seen = spy(log, priority=-500)
    trainer.extend(LoggingUnchain(log))
    trainer.extend(
        extensions.snapshot(writer=writer), trigger=(1, 'iteration'))
    trainer.extend(late)
    run(trainer, keep_graph=True)
    assert log == [(name, it) for it in (1, 2)
                   for name in ('snapshot', 'spy', 'unchain')]
    # The extension at -500 still saw the graph; it is gone afterwards.
    for records in seen.values():
        assert [held for _, held, _ in records] == [True] * len(records)
        assert all(v.creator_node is None for v, _, _ in records)


def test_priority_can_be_overridden(trainer_factory):
    log = []
    trainer = trainer_factory(stop=(1, 'iteration'))
    reader, seen = spy(log, priority=extensions.LogReport.priority)
    trainer.extend(LoggingUnchain(log), priority=training.PRIORITY_EDITOR)
    trainer.extend(reader)
    run(trainer, keep_graph=True)
    assert log == [('unchain', 1), ('spy', 1)]
    assert not any(held for _, held, _ in seen[1])


def test_flag_off_throughout_does_nothing(trainer_factory):
    log = []
    trainer = trainer_factory()
    ext = LoggingUnchain(log)
    trainer.extend(ext)
    run(trainer, keep_graph=False)
    assert unchain_calls(log) == []
    assert [ext.trigger(trainer) for _ in range(3)] == [False] * 3


def test_flag_on_throughout_unchains_every_iteration(trainer_factory):
    log = []
    trainer = trainer_factory()
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(LoggingUnchain(log))
    trainer.extend(late)
    run(trainer, keep_graph=True)
    assert unchain_calls(log) == [1, 2, 3, 4]
    for records in seen.values():
        assert records and all(held for _, held, _ in records)
        for var, _, array in records:
            assert var.creator_node is None
            numpy.testing.assert_array_equal(var.array, array)


def test_dump_graph_first_iteration_only(trainer_factory, tmp_path):
    log = []
    trainer = trainer_factory(stop=(3, 'iteration'))
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(extensions.DumpGraph('main/loss'))
    trainer.extend(LoggingUnchain(log))
    trainer.extend(late)
    run(trainer, keep_graph=False)
    assert (tmp_path / 'result' / 'cg.dot').exists()
    assert unchain_calls(log) == [1]
    assert all(held for _, held, _ in seen[1])
    assert all(v.creator_node is None for v, _, _ in seen[1])
    assert not any(held for it in (2, 3) for _, held, _ in seen[it])
    assert not chainer.config.keep_graph_on_report


class FlagToggler(training.Extension):
    """Turns the flag on during iteration 2, off during iteration 3.

    At iteration 2 it reports a Variable with its graph after turning the
    flag on: only the flag's current value tells it is there.  The update of
    iteration 3 keeps its graph: only the value carried from iteration 2
    tells that.
    """

    priority = training.PRIORITY_WRITER

    def __call__(self, trainer):
        iteration = trainer.updater.iteration
        if iteration == 2:
            chainer.config.keep_graph_on_report = True
            x = chainer.Variable(numpy.ones(3, numpy.float32))
            chainer.report({'toggler/extra': F.sum(x * 2)})
        elif iteration == 3:
            chainer.config.keep_graph_on_report = False


def test_flag_toggled_by_extension(trainer_factory):
    log = []
    trainer = trainer_factory()
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(FlagToggler())
    trainer.extend(LoggingUnchain(log))
    trainer.extend(late)
    run(trainer, keep_graph=False)
    assert unchain_calls(log) == [2, 3]
    held = {it: [h for _, h, _ in seen[it]] for it in seen}
    assert held[1] == held[4] == [False, False]
    assert held[2] == [False, False, True]  # the toggler's extra value
    assert held[3] == [True, True]  # the update ran with the flag on
    assert all(v.creator_node is None for it in seen for v, _, _ in seen[it])


@pytest.mark.parametrize('always', [False, True])
def test_nested_values_flag_on(trainer_factory, always):
    log = []
    trainer = trainer_factory(model=NestedClassifier(MLP()))
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(LoggingUnchain(log, always=always))
    trainer.extend(late)
    run(trainer, keep_graph=True)
    for records in seen.values():
        assert len(records) == 3 and all(held for _, held, _ in records)
        assert all(v.creator_node is None for v, _, _ in records)


def test_nested_values_flag_off_need_always(trainer_factory):
    # Chainer's reporter strips the graph of top-level Variables only.
    log = []
    trainer = trainer_factory(model=NestedClassifier(MLP()))
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(LoggingUnchain(log))
    trainer.extend(late)
    run(trainer, keep_graph=False)
    assert unchain_calls(log) == []
    assert [h for _, h, _ in seen[1]] == [True, True, True]

    log = []
    trainer = trainer_factory(model=NestedClassifier(MLP()))
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(LoggingUnchain(log, always=True))
    trainer.extend(late)
    run(trainer, keep_graph=False)
    assert unchain_calls(log) == [1, 2, 3, 4]
    assert all(v.creator_node is None for v, _, _ in seen[4])


def test_chainer_unchain_variables_misses_nested(trainer_factory):
    log = []
    trainer = trainer_factory(model=NestedClassifier(MLP()))
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(extensions.unchain_variables())
    trainer.extend(late)
    run(trainer, keep_graph=True)
    assert [v.creator_node is not None for v, _, _ in seen[1]] == [True] * 3


def resume_log(trainer_factory, tmp_path, make_toggler, stop, load=None):
    log = []
    trainer = trainer_factory(stop=(stop, 'iteration'),
                              out=tmp_path / 'result_{}'.format(stop))
    trainer.extend(make_toggler())
    trainer.extend(LoggingUnchain(log))
    trainer.extend(extensions.snapshot(), trigger=(1, 'iteration'))
    if load is not None:
        chainer.serializers.load_npz(load, trainer)
    run(trainer, keep_graph=False)
    return unchain_calls(log), trainer.out


@pytest.mark.parametrize('make_toggler, expected', [
    (FlagToggler, [2, 3]),
    (lambda: extensions.DumpGraph('main/loss'), [1]),
])
@pytest.mark.parametrize('cut', [1, 2, 3])
def test_resume_matches_uninterrupted(
        trainer_factory, tmp_path, make_toggler, expected, cut):
    whole, _ = resume_log(trainer_factory, tmp_path, make_toggler, 4)
    assert whole == expected
    first, out = resume_log(trainer_factory, tmp_path, make_toggler, cut)
    snapshot = '{}/snapshot_iter_{}'.format(out, cut)
    rest, _ = resume_log(
        trainer_factory, tmp_path, make_toggler, 4, load=snapshot)
    assert first + rest == whole


def test_resume_from_snapshot_without_this_extension(trainer_factory):
    trainer = trainer_factory(stop=(1, 'iteration'))
    trainer.extend(extensions.snapshot(), trigger=(1, 'iteration'))
    trainer.run()
    log = []
    resumed = trainer_factory(stop=(3, 'iteration'))
    resumed.extend(LoggingUnchain(log))
    with pytest.warns(RuntimeWarning, match='no state for it'):
        chainer.serializers.load_npz(
            '{}/snapshot_iter_1'.format(trainer.out), resumed)
    run(resumed, keep_graph=True)
    assert unchain_calls(log) == [2, 3]


def check_data_intact(device):
    model = NestedClassifier(MLP())
    x = numpy.random.RandomState(0).randn(8, 4).astype(numpy.float32)
    t = numpy.zeros(8, numpy.int32)
    model.to_device(device)
    x, t = model.device.send((x, t))
    reporter = chainer.Reporter()
    reporter.add_observer('main', model)
    observation = {}
    with chainer.using_config('keep_graph_on_report', True), \
            reporter.scope(observation):
        chainer.report({'loss': model(x, t)}, model)
    before = {id(v): v.xp.array(v.array, copy=True)
              for v in variables_in(observation)}
    # main/loss is also main/losses' ce: unchained once.
    assert unchain_nested(observation) == 3
    assert unchain_nested(observation) == 3  # already unchained: harmless
    assert len(variables_in(observation)) == 4
    for v in variables_in(observation):
        assert v.creator_node is None
        v.xp.testing.assert_array_equal(v.array, before[id(v)])


def test_data_intact_after_unchain():
    check_data_intact('@numpy')


@pytest.mark.gpu
def test_data_intact_after_unchain_gpu():
    check_data_intact('@cupy:0')


def test_already_unchained_by_chainer_is_harmless(trainer_factory):
    log = []
    trainer = trainer_factory()
    late, seen = spy(log, priority=PRIORITY_LAST + 1)
    trainer.extend(extensions.unchain_variables())
    trainer.extend(LoggingUnchain(log))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.extend(late)
    run(trainer, keep_graph=True)
    assert unchain_calls(log) == [1, 2, 3, 4]
    report = trainer.get_extension('LogReport').log
    assert [entry['iteration'] for entry in report] == [2, 4]
    assert all(numpy.isfinite(entry['main/loss']) for entry in report)


def test_cycles_and_other_values():
    x = chainer.Variable(numpy.ones(2, numpy.float32))
    y = x * 3
    cyclic = [y, 'text', numpy.zeros(2), None]
    cyclic.append(cyclic)
    assert unchain_nested({'a': cyclic, 'b': (cyclic,)}) == 1
    assert y.creator_node is None
    assert unchain_nested(5) == 0


def test_loop_entry_released(trainer_factory):
    trainer = trainer_factory(stop=(1, 'iteration'))
    stop_trigger = trainer.stop_trigger
    trainer.extend(UnchainVariables())
    trainer.run()
    assert trainer.stop_trigger is stop_trigger


def test_finalize_after_error_releases(trainer_factory):
    trainer = trainer_factory()

    @training.make_extension(trigger=(1, 'iteration'))
    def fail(trainer):
        raise RuntimeError('boom')

    ext = UnchainVariables()
    stop_trigger = trainer.stop_trigger
    trainer.extend(ext)
    trainer.extend(fail)
    with pytest.raises(RuntimeError, match='boom'):
        trainer.run(show_loop_exception_msg=False)
    assert trainer.stop_trigger is stop_trigger
    # Released: an update outside Trainer.run no longer reaches it.
    with chainer.using_config('keep_graph_on_report', True):
        trainer.updater.update()
    assert not ext.trigger(trainer)


@pytest.mark.parametrize('always', ['yes', 1, None, numpy.int64(1)])
def test_bad_always(always):
    with pytest.raises(TypeError, match=r'UnchainVariables\(always=.*bool'):
        UnchainVariables(always=always)

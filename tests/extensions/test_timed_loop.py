"""TimedLoop on a real Trainer, with known delays on a still clock."""

import os

import chainer
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from chainer_hookext.extensions.timed_loop import LoopFigures
from tests.conftest import MLP
from tests.conftest import Boom
from tests.conftest import BACKWARD
from tests.conftest import FakeComm
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import OPTIMIZER
from tests.conftest import SLOW
from tests.conftest import make_trainer
from tests.conftest import make_slow_trainer
from tests.conftest import run_timed
from tests.conftest import snapshot_of


#: The beginnings of the tail's figures.
TAIL = ('iteration/', 'slowest')


def test_each_phase_against_its_delay(still, tmp_path):
    timed, log = run_timed(make_slow_trainer(still, tmp_path))
    assert len(log) == 2
    for figures in log:
        assert figures['data'] == DATA
        assert figures['forward'] == FORWARD
        assert figures['backward'] == BACKWARD
        assert figures['optimizer'] == OPTIMIZER
        # Every other iteration: half its time per iteration.
        assert figures['extension/slow'] == SLOW / 2
        assert figures['extensions'] == SLOW / 2
        assert figures['other'] == 0.0
        assert figures['iteration'] == DATA + FORWARD + BACKWARD + (
            OPTIMIZER + SLOW / 2)
        assert figures['gc'] == 0.0
        assert {f for f in figures if not f.startswith(TAIL)} == {
            'iteration', 'data', 'forward', 'backward', 'optimizer',
            'extensions', 'extension/slow', 'extension/TimedLoop',
            'extension/LogReport', 'other', 'gc'}
    assert timed.summary()['iteration'] == log[0]['iteration']


def test_custom_update_core_work_before_forward_is_data(still, tmp_path):
    class GanLike(training.updaters.StandardUpdater):
        def update_core(self):
            batch = next(self.get_iterator('main'))  # not iterator.next()
            x, t = self.converter(batch, None)
            model = self.get_optimizer('main').target
            still.sleep(32.0)  # work of the updater's own
            loss = model(x, t)
            model.cleargrads()
            loss.backward()
            self.get_optimizer('main').update()

    trainer = make_slow_trainer(still, tmp_path, updater=GanLike)
    _, log = run_timed(trainer)
    for figures in log:
        assert figures['forward'] == FORWARD
        assert figures['backward'] == BACKWARD
        assert figures['optimizer'] == OPTIMIZER
        # Everything before the first function applied.
        assert figures['data'] == 32.0 + DATA
        assert figures['other'] == 0.0


def test_everything_is_restored(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path)
    updater = trainer.updater
    optimizer = updater.get_optimizer('main')
    converter = updater.converter
    stop_trigger = trainer.stop_trigger
    triggers = {n: e.trigger for n, e in trainer._extensions.items()}
    backward, grad = chainer.Variable.backward, chainer.grad
    run_timed(trainer)
    assert 'next' not in vars(updater.get_iterator('main'))
    assert updater.converter is converter
    assert 'update' not in vars(optimizer)
    assert 'forward' not in vars(optimizer.target)
    assert trainer.stop_trigger is stop_trigger
    assert all(trainer._extensions[n].trigger is t
               for n, t in triggers.items())
    assert chainer.Variable.backward is backward and chainer.grad is grad


def test_restored_after_an_exception(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path)

    @training.make_extension(trigger=(3, 'iteration'))
    def boom(trainer):
        raise Boom('boom')
    trainer.extend(boom)
    backward = chainer.Variable.backward
    with pytest.raises(Boom):
        run_timed(trainer)
    assert chainer.Variable.backward is backward
    assert 'update' not in vars(trainer.updater.get_optimizer('main'))
    assert 'stop_trigger' in vars(trainer)  # the trainer's own
    assert not isinstance(trainer.stop_trigger, type(None))
    assert type(trainer.stop_trigger).__name__ == 'IntervalTrigger'


def test_resume_reports_as_an_uninterrupted_run(still, tmp_path):
    whole = make_slow_trainer(still, tmp_path / 'whole', stop=8)
    timed_whole, log_whole = run_timed(whole)
    first = make_slow_trainer(still, tmp_path / 'first', stop=4)
    _, log_first = run_timed(first)
    second = make_slow_trainer(still, tmp_path / 'second', stop=8)
    timed, log_second = run_timed(second, snapshot=snapshot_of(first))
    assert log_first + log_second[2:] == log_whole
    assert timed.summary() == timed_whole.summary()


def test_print_report(still, tmp_path, capsys):
    run_timed(make_slow_trainer(still, tmp_path), print_report=True,
              unit='sec')
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ('TimedLoop at iteration 2: seconds per training '
                      'iteration, averaged over 2 iterations')
    assert out[1].split() == ['Phase', 'PerIteration', 'Share']
    assert out[2].split() == ['iteration', '23.00sec', '100.0%']
    assert out[3].split() == ['data', '1.00sec', '4.3%']


def test_print_report_indents_each_extension(still, tmp_path, capsys):
    run_timed(make_slow_trainer(still, tmp_path), print_report=True,
              unit='sec')
    out = capsys.readouterr().out.splitlines()
    labels = [line.split()[0] for line in out[2:12]]
    assert labels == ['iteration', 'data', 'forward', 'backward', 'optimizer',
                      'extensions', 'slow', 'TimedLoop', 'LogReport', 'other']
    assert out[8].startswith('  slow ')
    assert out[8].split()[1] == '{:.2f}sec'.format(SLOW / 2)


def test_gathered_over_workers(still, tmp_path, capsys):
    comm = FakeComm(0, [LoopFigures({'iteration': 100.0, 'data': 100.0},
                                    {})])
    _, log = run_timed(make_slow_trainer(still, tmp_path), comm=comm,
                       print_report=True, unit='sec')
    assert [sorted(sent.figures) for sent in comm.gathered] == [sorted([
        'iteration', 'data', 'forward', 'backward', 'optimizer',
        'extensions', 'extension/slow', 'extension/TimedLoop',
        'extension/LogReport', 'other', 'gc'])] * 2
    for figures in log:
        assert figures['data'] == (DATA + 100.0) / 2
        assert figures['data/max'] == 100.0
        assert figures['data/slowest_rank'] == 1
        assert figures['extension/slow'] == SLOW / 2
        assert figures['extension/slow/min'] == SLOW / 2
        assert figures['extension/slow/slowest_rank'] == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ('TimedLoop at iteration 2: seconds per training '
                      'iteration, mean over 2 workers')
    assert '  slow' in [line[:6] for line in out]


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"TimedLoop\(print_report='yes'\)"):
        TimedLoop(print_report='yes')
    with pytest.raises(ValueError, match=r"TimedLoop\(unit='minutes'\)"):
        TimedLoop(unit='minutes')
    with pytest.raises(TypeError, match=r"TimedLoop\(comm='naive'\)"):
        TimedLoop(comm='naive')


def test_parallel_updater(still, tmp_path):
    def parallel(iterator, optimizer):
        return training.updaters.ParallelUpdater(
            iterator, optimizer, devices={'main': -1, 'second': -1})

    _, log = run_timed(make_slow_trainer(still, tmp_path, updater=parallel))
    for figures in log:
        assert figures['data'] == DATA
        # Two models, each with its forward and backward.
        assert figures['forward'] == 2 * FORWARD
        assert figures['backward'] == 2 * BACKWARD
        assert figures['optimizer'] == OPTIMIZER
        assert figures['other'] == 0.0


def test_with_timed_links(still, tmp_path):
    from chainer_hookext import TimedLinks

    trainer = make_slow_trainer(still, tmp_path)
    trainer.extend(TimedLinks(), trigger=(2, 'iteration'))
    _, log = run_timed(trainer)
    entries = trainer.get_extension('LogReport').log
    for figures, entry in zip(log, entries):
        assert figures['forward'] == entry['time/main'] == FORWARD
        assert figures['backward'] == entry['time/main/backward'] == (
            BACKWARD)


class Interrupt(training.Extension):
    trigger = 3, 'iteration'

    def __call__(self, trainer):
        raise KeyboardInterrupt


class FinalizeRaises(training.Extension):
    priority = training.PRIORITY_WRITER + 10  # finalized before TimedLoop

    def __call__(self, trainer):
        pass

    def finalize(self):
        raise Boom('finalize')


@pytest.mark.parametrize('way_out', ['interrupt', 'earlier_finalize'])
def test_restored_on_every_way_out(still, tmp_path, way_out, user_state):
    trainer = make_slow_trainer(still, tmp_path)
    state = user_state(trainer)
    if way_out == 'interrupt':
        trainer.extend(Interrupt())
        expected = KeyboardInterrupt
    else:
        trainer.extend(FinalizeRaises())
        expected = Boom
    with pytest.raises(expected):
        run_timed(trainer)
    assert state.changes() == []


def test_later_initialize_failing_leaves_nothing(still, tmp_path,
                                                 user_state):
    class FailingInit(training.Extension):
        priority = training.PRIORITY_READER - 1  # after TimedLoop

        def initialize(self, trainer):
            raise Boom('initialize')

    trainer = make_slow_trainer(still, tmp_path)
    trainer.extend(FailingInit())
    state = user_state(trainer)
    with pytest.raises(Boom):
        run_timed(trainer)
    # Chainer calls no finalize then: the stop trigger's replacement stays
    # (docs/internals.md), and only forwards.
    assert state.changes() == [
        "<class 'chainer.training.trainer.Trainer'>.stop_trigger"]
    assert trainer.stop_trigger(trainer) is False


def test_with_timeline_and_timed_links(still, tmp_path):
    # Two loop extensions and a link hook extension in one trainer.
    from chainer_hookext import TimedLinks
    from chainer_hookext import Timeline

    trainer = make_slow_trainer(still, tmp_path)
    timed = TimedLinks()
    trainer.extend(timed, trigger=(2, 'iteration'))
    trainer.extend(Timeline(iterations=1), trigger=(2, 'iteration'))
    _, log = run_timed(trainer)
    assert [figures['forward'] for figures in log] == [FORWARD, FORWARD]
    assert timed.summary(by='name')['main']['occurrence'] == 4
    assert sorted(os.listdir(os.path.join(trainer.out, 'timeline'))) == [
        'iteration_3.json.gz']


def test_timeline_window_work_is_its_own_not_data(
        still, tmp_path, monkeypatch):
    # A window set up before its iteration starts and its file written
    # before the next starts: Timeline's own work, not any data phase.
    from chainer_hookext import Timeline
    from chainer_hookext.extensions import _timeline_recorder

    for owner, method in ((_timeline_recorder.Recorder, 'start'),
                          (Timeline, '_write_window')):
        original = getattr(owner, method)

        def slow(self, *args, original=original, **kwargs):
            still.sleep(SLOW)
            return original(self, *args, **kwargs)
        monkeypatch.setattr(owner, method, slow)
    trainer = make_slow_trainer(still, tmp_path)
    trainer.extend(Timeline(iterations=1), trigger=(2, 'iteration'))
    _, log = run_timed(trainer)
    # Set up at the end of iteration 2, after the first report: in the
    # second's two iterations (written at the end of 4, after it).
    assert [figures['data'] for figures in log] == [DATA, DATA]
    assert log[1]['extension/Timeline'] == SLOW / 2
    assert log[1]['iteration'] == sum(
        v for k, v in log[1].items()
        if k in ('data', 'forward', 'backward', 'optimizer', 'extensions',
                 'other'))


def test_two_optimizers_each_pass_in_its_phases(still, tmp_path):
    # A GAN-like update: two models, each its forward, backward and update.
    from tests.conftest import OPTIMIZER as OPT
    from tests.conftest import SlowModel

    class TwoModels(training.updaters.StandardUpdater):
        def update_core(self):
            batch = self.get_iterator('main').next()
            x, t = self.converter(batch, None)
            for name in ('gen', 'dis'):
                optimizer = self.get_optimizer(name)
                optimizer.update(optimizer.target, x, t)

    def updater(iterator, optimizer):
        second = chainer.optimizers.SGD().setup(SlowModel(still))
        second.add_hook(lambda opt: still.sleep(OPT), name='slow')
        return TwoModels(iterator, {'gen': optimizer, 'dis': second})

    _, log = run_timed(make_slow_trainer(still, tmp_path, updater=updater))
    for figures in log:
        assert figures['data'] == DATA
        assert figures['forward'] == 2 * FORWARD
        assert figures['backward'] == 2 * BACKWARD
        assert figures['optimizer'] == 2 * OPT
        assert figures['other'] == 0.0


def test_backward_step_that_raised_charges_no_earlier_time(still, tmp_path):
    # The first backward step of the second pass raises and is caught: the
    # backward's end is unknown, never a step of the pass before it.
    from tests.conftest import OPTIMIZER as OPT
    from tests.conftest import SlowModel

    class Raising(chainer.FunctionNode):
        def forward(self, inputs):
            return inputs

        def backward(self, indexes, grad_outputs):
            raise Boom('out of memory')

    class SkipsABatch(training.updaters.StandardUpdater):
        def update_core(self):
            batch = self.get_iterator('main').next()
            x, t = self.converter(batch, None)
            for name in ('gen', 'dis'):
                optimizer = self.get_optimizer(name)
                loss = optimizer.target(x, t)
                if name == 'dis':
                    loss = Raising().apply((loss,))[0]
                optimizer.target.cleargrads()
                try:
                    loss.backward()
                except Boom:
                    continue
                optimizer.update()

    def updater(iterator, optimizer):
        second = chainer.optimizers.SGD().setup(SlowModel(still))
        second.add_hook(lambda opt: still.sleep(OPT), name='slow')
        return SkipsABatch(iterator, {'gen': optimizer, 'dis': second})

    _, log = run_timed(make_slow_trainer(still, tmp_path, updater=updater))
    for figures in log:
        assert min(figures.values()) >= 0.0
        assert figures['optimizer'] == OPT
        assert sum(v for k, v in figures.items() if k in (
            'data', 'forward', 'backward', 'optimizer', 'extensions',
            'other')) == figures['iteration']


def _trainer_with_optimizer_named(name, tmp_path):
    # The updater's ``main`` and a second optimizer named ``name``.
    trainer = make_trainer(tmp_path, stop=(2, 'iteration'))
    model = chainer.links.Classifier(MLP())
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    trainer.updater._optimizers[name] = optimizer
    return trainer, model


@pytest.mark.parametrize('order', ['links_first', 'loop_first'])
def test_keys_shared_with_timed_links_are_refused(tmp_path, order):
    trainer, model = _trainer_with_optimizer_named('loop', tmp_path)
    both = [TimedLinks(model), TimedLoop()]
    for extension in (both if order == 'links_first' else both[::-1]):
        trainer.extend(extension)
    with pytest.raises(ValueError, match=(
            r'TimedLinks and TimedLoop would both report `time/loop/'
            r'backward`: TimedLinks the backward time of the link \'loop\', '
            r'TimedLoop its figure \'backward\'; rename the link .* or pass '
            r'TimedLinks `backward=False`\.')):
        trainer.run()
    # Refused before training: nothing was registered.
    assert not chainer._get_link_hooks()
    assert not chainer.get_function_hooks()


def test_keys_of_an_optimizer_named_loop_without_backward(tmp_path):
    trainer, model = _trainer_with_optimizer_named('loop', tmp_path)
    trainer.extend(TimedLinks(model, backward=False), trigger=(2, 'iteration'))
    trainer.extend(TimedLoop(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.run()
    log = trainer.get_extension('LogReport').log[0]
    assert 'time/loop' in log and 'time/loop/backward' in log


def _adds_up(figures):
    phases = ('data', 'forward', 'backward', 'optimizer', 'extensions',
              'other')
    extensions = [f for f in figures if f.startswith('extension/')]
    assert figures['extensions'] == sum(figures[f] for f in extensions)
    assert figures['iteration'] == sum(figures[p] for p in phases)


def test_resumed_without_an_extension_of_the_snapshot(still, tmp_path):
    # A snapshot taken with an extension the resumed trainer lacks: its
    # time before the snapshot is reported under its name, and the figures
    # add up.
    first = make_slow_trainer(still, tmp_path / 'first', stop=3)

    @training.make_extension(trigger=(1, 'iteration'))
    def gone(trainer):
        still.sleep(32.0)
    first.extend(gone)
    run_timed(first)
    second = make_slow_trainer(still, tmp_path / 'second', stop=6)
    timed, log = run_timed(second, snapshot=snapshot_of(first))
    # Since the report at 2: gone at 2 (called after TimedLoop) and at 3.
    resumed = log[1]
    assert resumed['extension/gone'] == 32.0 * 2 / 2
    assert 'extension/gone' not in log[2]  # nothing since
    for figures in log:
        _adds_up(figures)
    summary = timed.summary()
    assert summary['extension/gone'] == 32.0 * 3 / 6
    _adds_up(summary)


# -- a collection inside an extension is that extension's time ----------------

GC_SECONDS = 0.5  # a collection's time, exact in binary


class _CollectedSlowly:
    # Collected in a reference cycle: its __del__ runs inside gc.
    def __init__(self, still):
        self.still = still
        self.cycle = self

    def __del__(self):
        self.still.sleep(GC_SECONDS)


def _collect(still):
    import gc
    _CollectedSlowly(still)
    gc.collect()


def test_gc_inside_an_extension_is_its_time_not_gc(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path)

    # Before TimedLoop: reported in the same iteration.
    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_WRITER + 1)
    def collecting(trainer):
        _collect(still)
    trainer.extend(collecting)
    timed, log = run_timed(trainer)
    for figures in log:
        assert figures['gc'] == 0.0
        assert figures['extension/collecting'] == GC_SECONDS
        assert figures['iteration'] == DATA + FORWARD + BACKWARD + (
            OPTIMIZER + SLOW / 2 + GC_SECONDS)
    assert timed.summary()['gc'] == 0.0
    assert log[-1]['slowest/gc'] == 0.0


def test_gc_in_own_work_of_an_extension_is_its_time(still, tmp_path):
    # A pause of an extension's own work inside the update (LinkMemory's,
    # Timeline's) is that extension's time, its collections too.
    from chainer_hookext.timing import pauses

    class OwnWork(training.updaters.StandardUpdater):
        def update_core(self):
            with pauses.own_work('collecting'):
                _collect(still)
            super().update_core()
    trainer = make_slow_trainer(still, tmp_path, updater=OwnWork)
    timed, log = run_timed(trainer)
    for figures in log:
        assert figures['gc'] == 0.0
        assert figures['extension/collecting'] == GC_SECONDS
        assert figures['data'] == DATA


def test_gc_in_the_update_is_still_gc(still, tmp_path):
    class Collecting(training.updaters.StandardUpdater):
        def update_core(self):
            _collect(still)
            super().update_core()
    trainer = make_slow_trainer(still, tmp_path, updater=Collecting)
    timed, log = run_timed(trainer)
    for figures in log:
        assert figures['gc'] == GC_SECONDS
        assert figures['data'] == DATA + GC_SECONDS

"""Every extension of the package, alone and together, in any order, on
every way out of ``Trainer.run``: nothing of the user's or of Chainer's is
replaced, and copies and pickles of the model made during training behave
as without the extensions."""

import copy
import gc
import os
import pickle
import random
import threading
import types

import chainer
import chainer.links as L
import numpy
import pytest
from chainer import training
from chainer.training import extensions

import chainer_hookext
from tests.conftest import MLP
from tests.conftest import Boom
from tests.conftest import attributes_in_a_dict
from tests.conftest import make_dataset
from tests.conftest import make_trainer


EXTENSIONS = {
    'TimedLinks': lambda: chainer_hookext.TimedLinks(
        flops=True, functions=True, peak_flops=1e15, peak_bandwidth=1e15),
    'TimedLoop': lambda: chainer_hookext.TimedLoop(),
    'Timeline': lambda: chainer_hookext.Timeline(iterations=1, outliers=True,
                                                 functions=True, memory=True),
    'NonFiniteGuard': lambda: chainer_hookext.NonFiniteGuard(),
    'ActivationStatistics': lambda: chainer_hookext.ActivationStatistics(),
    'GradientStatistics': lambda: chainer_hookext.GradientStatistics(),
    'CaptureOutputs': lambda: chainer_hookext.CaptureOutputs(),
    'UnchainVariables': lambda: chainer_hookext.UnchainVariables(),
    'LinkMemory': lambda: chainer_hookext.LinkMemory(),
}


def _orders():
    names = list(EXTENSIONS)
    orders = [[name] for name in names]
    orders.append(names)
    orders.append(names[::-1])
    for seed in range(2):
        shuffled = list(names)
        random.Random(seed).shuffle(shuffled)
        orders.append(shuffled)
    return orders


ORDERS = _orders()


class RaisingModel(L.Classifier):
    """A classifier whose forward raises ``error`` at its ``at``-th call."""

    def __init__(self, error=None, at=3):
        super().__init__(MLP())
        self.error = error
        self.at = at
        self.calls = 0

    def forward(self, *args, **kwargs):
        self.calls += 1
        if self.error is not None and self.calls == self.at:
            raise self.error
        return super().forward(*args, **kwargs)


def _raise_in_extension(error):
    @training.make_extension(trigger=(3, 'iteration'))
    def raising(trainer):
        raise error
    return raising


class FinalizeRaises(training.Extension):
    priority = training.PRIORITY_WRITER + 10  # finalized first

    def __call__(self, trainer):
        pass

    def finalize(self):
        raise Boom('finalize')


WAYS_OUT = ['end', 'update_raises', 'extension_raises', 'interrupt',
            'interrupt_in_update', 'finalize_raises']


def _trainer_for(way_out, out):
    error = {'update_raises': Boom('update'),
             'interrupt_in_update': KeyboardInterrupt()}.get(way_out)
    trainer = make_trainer(out, stop=(5, 'iteration'),
                           model=RaisingModel(error), evaluator=True)
    if way_out == 'extension_raises':
        trainer.extend(_raise_in_extension(Boom('extension')))
    elif way_out == 'interrupt':
        trainer.extend(_raise_in_extension(KeyboardInterrupt()))
    elif way_out == 'finalize_raises':
        trainer.extend(FinalizeRaises())
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    return trainer


def _run(trainer, way_out):
    if way_out == 'end':
        trainer.run(show_loop_exception_msg=False)
        return
    expected = KeyboardInterrupt if 'interrupt' in way_out else Boom
    with pytest.raises(expected):
        trainer.run(show_loop_exception_msg=False)


@pytest.mark.parametrize('way_out', WAYS_OUT)
@pytest.mark.parametrize('order', ORDERS, ids='-'.join)
def test_every_way_out_leaves_everything(tmp_path, user_state, order,
                                         way_out):
    trainer = _trainer_for(way_out, tmp_path)
    for name in order:
        trainer.extend(EXTENSIONS[name](), trigger=(2, 'iteration'))
    state = user_state(trainer)
    _run(trainer, way_out)
    assert state.changes() == []


@pytest.mark.parametrize('way_out', WAYS_OUT)
def test_profile_report_too(tmp_path, user_state, way_out):
    # Every extension, and the page written on the way out (it draws: one
    # order only).
    trainer = _trainer_for(way_out, tmp_path)
    for make in EXTENSIONS.values():
        trainer.extend(make(), trigger=(2, 'iteration'))
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(2, 'iteration'))
    state = user_state(trainer)
    _run(trainer, way_out)
    assert state.changes() == []
    assert os.path.isfile(os.path.join(trainer.out, 'profile.html'))


def test_two_trainers_in_two_threads(tmp_path, user_state):
    results = {}
    gc_callbacks = list(gc.callbacks)

    def train(name):
        trainer = make_trainer(tmp_path / name, stop=(20, 'iteration'))
        for make in EXTENSIONS.values():
            trainer.extend(make(), trigger=(5, 'iteration'))
        trainer.extend(extensions.LogReport(trigger=(5, 'iteration')))
        state = user_state(trainer, process=False)  # gc.callbacks: below
        trainer.run()
        log = trainer.get_extension('LogReport').log
        results[name] = state.changes(), [
            sum(e['time/loop/' + p] for p in (
                'data', 'forward', 'backward', 'optimizer', 'extensions',
                'other')) / e['time/loop/iteration'] for e in log]

    threads = [threading.Thread(target=train, args=(name,))
               for name in ('a', 'b')]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for changes, sums in results.values():
        assert changes == []
        assert len(sums) == 4 and sums == pytest.approx([1.0] * 4)
    assert gc.callbacks == gc_callbacks


class CopiesDuringTraining(training.Extension):
    """At its call, copies and pickles the model, optimizer and iterator,
    and checks what the copies compute."""

    trigger = 3, 'iteration'
    priority = training.PRIORITY_READER - 1

    def __init__(self):
        self.checked = []

    def __call__(self, trainer):
        updater = trainer.updater
        optimizer = updater.get_optimizer('main')
        model = optimizer.target
        x, _ = chainer.dataset.concat_examples(make_dataset(8, seed=3))
        for copied in (model.copy(mode='copy'), copy.deepcopy(model),
                       pickle.loads(pickle.dumps(model))):
            # The copy's own weights, moved away from the original's.
            copied.predictor.l1.W.array += 1.0
            own = L.Classifier(MLP())
            own.copyparams(copied)
            y = copied.predictor(x).array
            numpy.testing.assert_array_equal(y, own.predictor(x).array)
            assert not numpy.array_equal(y, model.predictor(x).array)
        pickle.loads(pickle.dumps(updater.get_iterator('main')))
        for copied in (pickle.loads(pickle.dumps(optimizer)),
                       copy.deepcopy(optimizer)):
            target = copied.target
            # Its hooks (ours copied) run without feeding the figures.
            copied.update(lambda: chainer.functions.sum(target.predictor(x)))
        self.checked.append(updater.iteration)


def test_copies_and_pickles_during_training(tmp_path):
    trainer = make_trainer(tmp_path, stop=(6, 'iteration'))
    for name, make in EXTENSIONS.items():
        if name != 'TimedLinks':
            trainer.extend(make(), trigger=(2, 'iteration'))
    timed = chainer_hookext.TimedLinks()
    trainer.extend(timed, trigger=(6, 'iteration'))
    copies = CopiesDuringTraining()
    trainer.extend(copies)
    trainer.run()
    assert copies.checked == [3, 6]
    # The copies' calls (outside the update) were not timed: one call of
    # the model per iteration.
    assert timed.summary(by='name')['main']['occurrence'] == 6


class CallStyleModel(chainer.Chain):
    """A Chainer v1 style target: ``__call__`` instead of ``forward``."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 3)

    def __call__(self, x, t):
        return chainer.functions.softmax_cross_entropy(self.l1(x), t)


def test_call_style_target_is_timed(tmp_path, user_state):
    import warnings
    trainer = make_trainer(tmp_path, model=CallStyleModel())
    timed = chainer_hookext.TimedLoop()
    trainer.extend(timed, trigger=(2, 'iteration'))
    trainer.extend(chainer_hookext.Timeline(iterations=1),
                   trigger=(2, 'iteration'))
    state = user_state(trainer)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)  # Link.__call__
        trainer.run()
    assert state.changes() == []
    summary = timed.summary()
    assert summary['forward'] > 0 and summary['backward'] > 0


def test_stop_trigger_time_is_other(still, tmp_path):
    from tests.conftest import make_slow_trainer

    trainer = make_slow_trainer(still, tmp_path)

    class SlowStop(training.triggers.IntervalTrigger):
        def __call__(self, trainer):
            still.sleep(20.0)
            return super().__call__(trainer)

    trainer.stop_trigger = SlowStop(4, 'iteration')

    @training.make_extension(trigger=lambda trainer: False)
    def never_runs(trainer):
        pass
    trainer.extend(never_runs)
    timed = chainer_hookext.TimedLoop()
    trainer.extend(timed, trigger=(2, 'iteration'))
    trainer.run()
    summary = timed.summary()
    assert summary['extension/never_runs'] == 0.0
    # Each iteration's check after it; the one before the first is in no
    # iteration.
    assert summary['other'] == 20.0


def test_numpy_model_unchanged_by_function_hook(tmp_path):
    # The loss computed with and without the extensions is the same.
    losses = []
    for with_ours in (False, True):
        numpy.random.seed(0)
        trainer = make_trainer(tmp_path / str(with_ours),
                               stop=(4, 'iteration'))
        if with_ours:
            for make in EXTENSIONS.values():
                trainer.extend(make(), trigger=(2, 'iteration'))
        trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
        trainer.updater.get_optimizer('main').target.predictor.copyparams(
            _fixed_mlp())
        trainer.run()
        losses.append([e['main/loss'] for e in
                       trainer.get_extension('LogReport').log])
    assert losses[0] == losses[1]


def _fixed_mlp():
    numpy.random.seed(1)
    return MLP()


def _ours_outside_extensions(trainer):
    # Every object of the package reachable from ``trainer`` but through
    # its extensions (the user's own objects, copied with it).
    extensions = {id(e.extension) for e in trainer._extensions.values()}
    seen, stack, found = set(), [trainer], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType)):
            continue
        seen.add(id(obj))
        if id(obj) in extensions:
            continue
        module = (obj.__module__ if isinstance(obj, types.FunctionType)
                  else type(obj).__module__)
        if module.startswith('chainer_hookext') or '__setstate__' in getattr(
                obj, '__dict__', {}):
            found.append(obj)
        if not isinstance(obj, (types.FunctionType, numpy.ndarray)):
            stack.extend(gc.get_referents(obj))
    return found


class CopiesTrainer(training.Extension):
    """Pickles and deep-copies the whole trainer at each call."""

    trigger = 1, 'iteration'
    priority = training.PRIORITY_WRITER + 1  # before the Evaluator

    def __init__(self):
        self.copies = []
        self.stand_ins = set()

    def __call__(self, trainer):
        self.stand_ins.update(
            type(o).__name__ for o in _ours_outside_extensions(trainer))
        for copied in (pickle.loads(pickle.dumps(trainer)),
                       copy.deepcopy(trainer)):
            self.copies.append((trainer.updater.iteration, copied))


def test_trainer_pickled_and_copied_during_training(tmp_path, user_state):
    trainer = make_trainer(tmp_path, stop=(4, 'iteration'), evaluator=True)
    timed = chainer_hookext.TimedLoop()
    for extension in (chainer_hookext.TimedLinks(), timed,
                      chainer_hookext.Timeline(iterations=1),
                      chainer_hookext.LinkMemory(),
                      chainer_hookext.NonFiniteGuard(backward=True)):
        trainer.extend(extension, trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    copies = CopiesTrainer()
    trainer.extend(copies)
    state = user_state(trainer)
    trainer.run()
    # The run is unaffected (copyreg caches a class's __slotnames__ on it
    # the first time it pickles one: Python's doing, not ours).
    assert [c for c in state.changes()
            if not c.endswith('.__slotnames__')] == []
    assert [i for i, _ in copies.copies] == [1, 1, 2, 2, 3, 3, 4, 4]
    assert copies.stand_ins >= {
        '_ReporterScope', 'TimedTrigger', '_ConsultedTrigger',
        '_GradientCheck'}
    for entry in trainer.get_extension('LogReport').log:
        assert entry['time/loop/iteration'] == pytest.approx(sum(
            entry['time/loop/' + p] for p in (
                'data', 'forward', 'backward', 'optimizer', 'extensions',
                'other')))
        assert entry['time/main'] > 0
    # Each copy is a plain trainer: the triggers, the reporter, the
    # optimizer's hooks are Chainer's and the user's.
    for _, copied in copies.copies:
        assert _ours_outside_extensions(copied) == []
        assert 'scope' not in vars(copied.reporter)
        optimizer = copied.updater.get_optimizer('main')
        assert not optimizer._hookable._pre_update_hooks
        assert not optimizer._hookable._post_update_hooks


def test_attributes_are_read_as_fast_after_training(tmp_path):
    # Not vars() of the user's or Chainer's objects: each later read of an
    # attribute of theirs would be slower (tests/test_observer.py, ours).
    trainer = make_trainer(tmp_path, stop=(4, 'iteration'))
    for name, make in EXTENSIONS.items():
        trainer.extend(make(), name=name)
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    trainer.extend(chainer_hookext.ProfileReport(), name='ProfileReport')
    optimizer = trainer.updater.get_optimizer('main')
    theirs = [trainer, trainer.reporter, trainer.updater, optimizer,
              trainer.updater.get_iterator('main')] + list(
        trainer._extensions.values())
    in_place = [obj for obj in theirs if not attributes_in_a_dict(obj)]
    assert trainer in in_place and optimizer in in_place
    trainer.run()
    assert [type(obj).__name__ for obj in in_place
            if attributes_in_a_dict(obj)] == []

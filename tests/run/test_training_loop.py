"""Where the training loop's start and end are seen (issue 12).

Every test drives a real ``Trainer`` and checks what the user sees: the
hooks fire for the whole loop, and after ``trainer.run()`` returns or raises
no hook of this package is registered in the thread.
"""

import sys

import chainer
import numpy
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import _registry
from chainer_hookext import CaptureOutputs
from chainer_hookext import LinkHookExtension
from chainer_hookext import NonFiniteError
from chainer_hookext import NonFiniteGuard
from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from chainer_hookext import UnchainVariables
from chainer_hookext.run import training_loop
from tests.conftest import Boom
from tests.conftest import FailingInit
from tests.conftest import MLP
from tests.conftest import make_dataset
from tests.conftest import raise_boom


def ours():
    """Keys of this package's link and function hooks in the thread."""
    return sorted(
        key for registry in (chainer._get_link_hooks(),
                             chainer.get_function_hooks())
        for key in registry if key.startswith(_registry.PREFIX))


def model_of(trainer):
    return trainer.updater.get_optimizer('main').target


def poison_at(iteration):
    """An extension that makes the model's l1 produce NaN from ``iteration``
    on (it runs after that iteration's update)."""
    @training.make_extension(trigger=(1, 'iteration'), priority=-1000)
    def poison(trainer):
        if trainer.updater.iteration == iteration:
            model_of(trainer).predictor.l1.W.array[...] = numpy.nan
    return poison


def warm_up(trainer):
    # A warm-up update before training, as a benchmark would do.
    if trainer.updater.iteration == 0:
        trainer.updater.update()


class WrapUpdate(training.Extension):
    """Wraps ``trainer.updater.update`` in ``initialize``, as profilers do;
    initialized after the extensions under test (lowest priority)."""

    priority = -1000

    def initialize(self, trainer):
        update = trainer.updater.update
        self.calls = 0

        def wrapped(*args, **kwargs):
            self.calls += 1
            return update(*args, **kwargs)
        trainer.updater.update = wrapped

    def __call__(self, trainer):
        pass


def add_case(trainer, case):
    if case == 'warm_up':
        trainer.extend(warm_up, name='warm_up', call_before_training=True)
    elif case == 'wrapped_update':
        trainer.extend(WrapUpdate())


# -- 1: hooks registered for the loop, whatever runs before it ------------

@pytest.mark.parametrize('case', ['plain', 'warm_up', 'wrapped_update'])
def test_timed_links_times_the_loop(trainer_factory, case):
    trainer = trainer_factory()
    timed = TimedLinks()
    trainer.extend(timed)
    add_case(trainer, case)
    trainer.run()
    updates = 3 if case == 'warm_up' else 4  # the loop's, not the warm-up
    assert timed.summary(by='name')['main']['occurrence'] == updates
    assert timed.summary(by='name')['main']['elapsed_time'] > 0
    assert ours() == []


@pytest.mark.parametrize('case', ['plain', 'warm_up', 'wrapped_update'])
def test_non_finite_guard_fires_in_the_loop(trainer_factory, case):
    trainer = trainer_factory()
    trainer.extend(NonFiniteGuard(backward=False))
    trainer.extend(poison_at(2))
    add_case(trainer, case)
    with pytest.raises(NonFiniteError) as info:
        trainer.run(show_loop_exception_msg=False)
    assert (info.value.link, info.value.iteration) == (
        'main/predictor/l1', 3)
    assert ours() == []


def test_warm_up_is_not_hooked(trainer_factory):
    trainer = trainer_factory()
    calls = []
    hook = chainer_link_hook(calls)
    trainer.extend(LinkHookExtension(hook))
    trainer.extend(warm_up, name='warm_up', call_before_training=True)
    trainer.run()
    # Classifier, MLP, l1, l2 in the loop's 3 updates only.
    assert len(calls) == 4 * 3


def chainer_link_hook(calls):
    class Hook(chainer.LinkHook):
        name = 'Hook'

        def forward_preprocess(self, args):
            calls.append(args.link)
    return Hook()


@pytest.mark.parametrize('timed_loop_first', [True, False])
def test_beside_timed_loop(trainer_factory, timed_loop_first):
    # TimedLoop takes the place of trainer.stop_trigger too; whichever is
    # initialized second wraps the other's replacement.
    trainer = trainer_factory()
    timed = TimedLinks()
    loop = TimedLoop()
    unchain = UnchainVariables()
    first, second = (loop, timed) if timed_loop_first else (timed, loop)
    trainer.extend(first, priority=500)
    trainer.extend(second, priority=400)
    trainer.extend(unchain)
    with chainer.using_config('keep_graph_on_report', True):
        trainer.run()
    assert timed.summary(by='name')['main']['occurrence'] == 4
    assert loop.summary()['iteration'] > 0
    assert ours() == []


def test_stop_trigger_wrapped_twice_warns(trainer_factory):
    # Two replacements over ours: the loop's start is not recognised, which
    # the extension says when the run ends instead of reporting zeros.
    trainer = trainer_factory()
    trainer.extend(LinkHookExtension(chainer_link_hook([])))

    class WrapTwice(training.Extension):
        priority = -1000

        def initialize(self, trainer):
            for _ in range(2):
                inner = trainer.stop_trigger
                trainer.stop_trigger = (
                    lambda inner: lambda trainer: inner(trainer))(inner)

        def __call__(self, trainer):
            pass

    trainer.extend(WrapTwice())
    with pytest.warns(RuntimeWarning, match='never registered'):
        trainer.run()
    assert ours() == []


# -- 2: no hook left behind ---------------------------------------------------

class FailingFinalize(training.Extension):
    """Finalized first (highest priority); its ``finalize`` raises."""

    priority = 10000

    def __call__(self, trainer):
        pass

    def finalize(self):
        raise Boom('finalize')


def interrupt_at(iteration):
    @training.make_extension(trigger=(1, 'iteration'))
    def interrupt(trainer):
        if trainer.updater.iteration == iteration:
            raise KeyboardInterrupt
    return interrupt


@pytest.mark.parametrize('way_out', ['end', 'error', 'interrupt'])
def test_earlier_finalize_raising_leaves_no_hook(trainer_factory, way_out):
    trainer = trainer_factory()
    capture = CaptureOutputs()
    for extension in (TimedLinks(), NonFiniteGuard(), capture,
                      FailingFinalize()):
        trainer.extend(extension)
    if way_out == 'error':
        trainer.extend(poison_at(2))
    elif way_out == 'interrupt':
        trainer.extend(interrupt_at(2))
    with pytest.raises(Boom):  # finalize's error is the last one raised
        trainer.run(show_loop_exception_msg=False)
    assert ours() == []
    assert chainer._get_link_hooks() == {}
    assert chainer.get_function_hooks() == {}
    # Calling the model afterwards reaches no hook.
    capture.hook.clear()
    model_of(trainer).predictor(numpy.zeros((1, 4), numpy.float32))
    assert capture.outputs == {}


class FailingDeleted(chainer.LinkHook):
    name = 'FailingDeleted'

    def deleted(self, link):
        raise Boom('deleted')


def test_hook_whose_deleted_raises_leaves_no_other_hook(trainer_factory):
    trainer = trainer_factory()
    trainer.extend(LinkHookExtension(FailingDeleted()))
    trainer.extend(CaptureOutputs())  # finalized after the failing one
    trainer.extend(TimedLinks())
    with pytest.raises(Boom, match='deleted'):
        trainer.run(show_loop_exception_msg=False)
    assert chainer._get_link_hooks() == {}
    assert chainer.get_function_hooks() == {}


def test_failed_initialize_leaves_nothing_on_the_updater(trainer_factory):
    trainer = trainer_factory()
    updater = trainer.updater
    update = updater.update
    trainer.extend(TimedLinks())
    trainer.extend(UnchainVariables())
    trainer.extend(FailingInit(), priority=-1000)
    with pytest.raises(Boom):
        trainer.run()
    assert updater.update == update
    # The updater drives another trainer, hooked by its own extension only.
    other = training.Trainer(updater, (6, 'iteration'), out=trainer.out)
    timed = TimedLinks()
    other.extend(timed)
    other.run()
    assert timed.summary(by='name')['main']['occurrence'] == 6
    assert ours() == []


def test_stop_trigger_restored(trainer_factory):
    trainer = trainer_factory()
    stop_trigger = trainer.stop_trigger
    trainer.extend(TimedLinks())
    trainer.extend(UnchainVariables())
    trainer.run()
    assert trainer.stop_trigger is stop_trigger


def test_stop_trigger_forwarded_before_the_loop(trainer_factory):
    # What other extensions read of trainer.stop_trigger before the loop.
    trainer = trainer_factory()
    seen = []

    class Reader(training.Extension):
        priority = -1000

        def initialize(self, trainer):
            seen.append(trainer.stop_trigger.get_training_length())

        def __call__(self, trainer):
            pass

    trainer.extend(TimedLinks())
    trainer.extend(Reader())
    trainer.run()
    assert seen == [(4, 'iteration')]


def raise_in_run_between_iterations(trainer, iteration, exc):
    """Raises ``exc`` in ``Trainer.run``'s own code, between two iterations
    (where an asynchronous KeyboardInterrupt may land), with a trace
    function on run's frame."""
    run_code = training.Trainer.run.__code__

    def trace(frame, event, arg):
        if frame.f_code is not run_code:
            return None

        def local(frame, event, arg):
            if (event == 'line' and trainer.updater.iteration == iteration
                    and 'stop_trigger(self)' in _line(frame)):
                sys.settrace(None)
                frame.f_trace = None
                raise exc
            return local
        return local
    return trace


def _line(frame):
    import linecache
    return linecache.getline(frame.f_code.co_filename, frame.f_lineno)


def test_loop_left_running_removed_by_the_next_run(trainer_factory):
    # The one way out not seen from inside the loop: an interrupt in
    # Trainer.run's own code between iterations, and an earlier finalize
    # raising.  The hooks left behind are removed when the next run starts
    # in the thread, with a warning.
    trainer = trainer_factory()
    capture = CaptureOutputs()
    trainer.extend(capture)
    trainer.extend(FailingFinalize())
    sys.settrace(raise_in_run_between_iterations(
        trainer, 2, KeyboardInterrupt()))
    try:
        with pytest.raises(Boom):
            trainer.run()
    finally:
        sys.settrace(None)
    assert ours() == ['chainer_hookext.CaptureOutputsHook']
    other = trainer_factory()
    other.extend(TimedLinks())
    with pytest.warns(RuntimeWarning, match='left registered'):
        other.run()
    assert ours() == []


# -- 3: which part of the iteration runs (issue 32) ---------------------------

class Watcher(training.Extension):
    """Installs a loop on the trainer, listens to its update (unless
    ``listen=False``) and keeps what its flags said, seen from the update
    and from the extensions; ends the loop as ``LinkHookExtension``
    does."""

    priority = -1000

    def __init__(self, listen=True):
        self.seen = []
        self.changes = []
        self.listen = listen
        self.loop = None

    def initialize(self, trainer):
        self.loop = training_loop.TrainingLoop.install(
            trainer, self.enter, self.end)
        if self.listen:
            self.loop.add_update_callback(self.changes.append)

    def enter(self):
        self.look('enter')

    def end(self):
        self.look('end')

    def look(self, where):
        self.seen.append((where, self.loop.in_update, self.loop.evaluator))

    def __call__(self, trainer):
        self.look('watcher')

    def on_error(self, trainer, exc, tb):
        self.loop.end()

    def finalize(self):
        self.loop.end()


class WatchedEvaluator(extensions.Evaluator):
    def __init__(self, watcher, model):
        iterator = chainer.iterators.SerialIterator(
            make_dataset(8), 8, repeat=False)
        super().__init__(iterator, model)
        self.watcher = watcher

    def evaluate(self):
        self.watcher.look('evaluator')
        return super().evaluate()


def watched_trainer(tmp_path, update=None, listen=True):
    """A trainer whose update tells the watcher, then runs ``update``."""
    watcher = Watcher(listen)

    class Updater(training.updaters.StandardUpdater):
        def update_core(self):
            watcher.look('update')
            if update is not None:
                update(self)
            super().update_core()

    model = chainer.links.Classifier(MLP())
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(make_dataset(), 8)
    trainer = training.Trainer(Updater(it, optimizer), (2, 'iteration'),
                               out=str(tmp_path))
    trainer.extend(watcher, trigger=(1, 'iteration'))
    return trainer, watcher


def look(watcher, name, priority):
    @training.make_extension(trigger=(1, 'iteration'), priority=priority)
    def look(trainer):
        watcher.look(name)
    return look


def test_flags_tell_the_update_and_the_evaluator(tmp_path):
    trainer, watcher = watched_trainer(tmp_path)
    evaluator = WatchedEvaluator(watcher, model_of(trainer))
    trainer.extend(look(watcher, 'first', 300))
    trainer.extend(evaluator, trigger=(1, 'iteration'), priority=200)
    trainer.extend(look(watcher, 'after', 100))
    entries = dict(trainer._extensions)
    before = {name: entry.trigger for name, entry in entries.items()}
    trainer.run()
    iteration = [('update', True, None), ('first', False, None),
                 ('evaluator', False, evaluator), ('after', False, None),
                 ('watcher', False, None)]
    assert watcher.seen == [('enter', False, None)] + iteration * 2 + [
        ('end', False, None)]
    assert watcher.changes == [True, False] * 2
    assert {name: e.trigger for name, e in entries.items()} == before


def test_an_evaluator_not_called_is_not_running(tmp_path):
    trainer, watcher = watched_trainer(tmp_path)
    trainer.extend(WatchedEvaluator(watcher, model_of(trainer)),
                   trigger=(5, 'iteration'), priority=200)
    trainer.run()
    assert watcher.seen[1:3] == [('update', True, None),
                                 ('watcher', False, None)]


def test_the_last_extension_an_evaluator(tmp_path):
    # No entry after it: the iteration's end ends its call.
    trainer, watcher = watched_trainer(tmp_path)
    evaluator = WatchedEvaluator(watcher, model_of(trainer))
    trainer.extend(evaluator, trigger=(1, 'iteration'), priority=-2000)
    trainer.run()
    assert watcher.seen[1:4] == [('update', True, None),
                                 ('watcher', False, None),
                                 ('evaluator', False, evaluator)]
    assert watcher.seen[4] == ('update', True, None)


def test_triggers_left_alone_when_nobody_listens(tmp_path):
    seen = []

    def trigger_of_first(updater):
        seen.append(trainer._extensions['first'].trigger)

    trainer, watcher = watched_trainer(
        tmp_path, update=trigger_of_first, listen=False)
    trainer.extend(look(watcher, 'first', 300), name='first')
    trigger = trainer._extensions['first'].trigger
    trainer.run()
    assert seen == [trigger, trigger]
    # Without a listener the flags are not kept.
    assert ('first', True, None) in watcher.seen


def interrupt(*args):
    raise KeyboardInterrupt


@pytest.mark.parametrize('update, exc', [(raise_boom, Boom),
                                         (interrupt, KeyboardInterrupt)])
def test_triggers_put_back_when_the_update_raises(tmp_path, user_state,
                                                  update, exc):
    # Every way out of the update leaves the iteration's scope: each
    # entry's trigger is its own again before any on_error (TimedLoop's
    # wrapped triggers are put back then).
    trainer, watcher = watched_trainer(tmp_path, update=update)
    trainer.extend(TimedLoop(), trigger=(1, 'iteration'))
    trainer.extend(TimedLinks(), trigger=(1, 'iteration'))
    state = user_state(trainer)
    with pytest.raises(exc):
        trainer.run(show_loop_exception_msg=False)
    assert state.changes() == []
    assert watcher.seen == [('enter', False, None), ('update', True, None),
                            ('end', False, None)]
    assert ours() == []


def test_a_scope_inside_the_update_does_not_end_it(tmp_path):
    def scope(updater):
        with trainer.reporter.scope({}):
            pass
        watcher.look('after')

    trainer, watcher = watched_trainer(tmp_path, update=scope)
    trainer.run()
    assert watcher.seen[1:3] == [('update', True, None),
                                 ('after', True, None)]


def test_update_callback_removed(tmp_path):
    trainer, watcher = watched_trainer(tmp_path)

    @training.make_extension(trigger=(1, 'iteration'))
    def stop_listening(trainer):
        watcher.loop.remove_update_callback(watcher.changes.append)
        watcher.loop.remove_update_callback(watcher.changes.append)  # again

    trainer.extend(stop_listening)
    trainer.run()
    assert watcher.changes == [True, False]

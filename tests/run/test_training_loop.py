"""Where the training loop's start and end are seen (issue 12).

Every test drives a real ``Trainer`` and checks what the user sees: the
hooks fire for the whole loop, and after ``trainer.run()`` returns or raises
no hook of this package is registered in the thread.
"""

import copy
import pickle
import sys

import chainer
import numpy
import pytest
from chainer import training

from chainer_hookext import _registry
from chainer_hookext import CaptureOutputs
from chainer_hookext import LinkHookExtension
from chainer_hookext import NonFiniteError
from chainer_hookext import NonFiniteGuard
from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from chainer_hookext import UnchainVariables
from tests.conftest import Boom
from tests.conftest import FailingInit
from tests.conftest import hook_keys


def ours():
    """Keys of this package's link and function hooks in the thread."""
    return sorted(
        key for registry in (chainer._get_link_hooks(),
                             chainer.get_function_hooks())
        for key in hook_keys(registry) if key.startswith(_registry.PREFIX))


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


class CopiesAtStart(training.Extension):
    """Called before training: pickles or deep-copies the trainer."""

    def __init__(self, how):
        self.how = how
        self.copies = []

    def __call__(self, trainer):
        if trainer.updater.iteration == 0:
            self.copies.append(
                pickle.loads(pickle.dumps(trainer)) if self.how == 'pickle'
                else copy.deepcopy(trainer))


@pytest.mark.parametrize('how', ['pickle', 'deepcopy'])
def test_trainer_copied_before_the_loop_has_its_stop_trigger(
        trainer_factory, how):
    # Before the loop's start TrainingLoop stands in for the stop trigger:
    # a copy made then (an extension called before training) has the
    # trainer's own; the copies of the extensions wait for no loop.
    trainer = trainer_factory()
    copies = CopiesAtStart(how)
    trainer.extend(TimedLinks())
    trainer.extend(TimedLoop())
    trainer.extend(copies, call_before_training=True)
    trainer.run()
    copied, = copies.copies
    assert type(copied.stop_trigger) is training.triggers.IntervalTrigger
    assert copied.stop_trigger.get_training_length() == (4, 'iteration')
    assert '__setstate__' not in vars(copied)
    timed = copied.get_extension('TimedLinks')
    assert timed._entry.trigger is copied.stop_trigger
    assert not timed._entry.waiting

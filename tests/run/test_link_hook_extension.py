import re

import chainer
import chainer.links as L
import numpy
import pytest
from chainer import training
from chainer.link_hooks import TimerHook
from chainer.training import extensions
from chainer.training import triggers

import chainer_hookext
from chainer_hookext import CallbackHook
from chainer_hookext import CaptureOutputsHook
from chainer_hookext import LinkHookExtension
from chainer_hookext import TimedLinks
from tests.conftest import Boom
from tests.conftest import FailingInit
from tests.conftest import MLP
from tests.conftest import make_dataset
from tests.conftest import raise_boom
from tests.conftest import registered_hooks
from chainer_hookext import _registry
from tests.conftest import hook_keys


class RecordingHook(chainer.LinkHook):
    """Counts added/deleted and records (link, train mode) per call."""

    name = 'RecordingHook'

    def __init__(self):
        self.added_with = []
        self.deleted_with = []
        self.calls = []
        self.post = 0

    def added(self, link):
        self.added_with.append(link)

    def deleted(self, link):
        self.deleted_with.append(link)

    def forward_preprocess(self, args):
        self.calls.append((args.link, chainer.config.train))

    def forward_postprocess(self, args):
        self.post += 1


def assert_released(hook, trainer, entered=True):
    model = trainer.updater.get_optimizer('main').target
    assert registered_hooks(model) == []
    assert len(hook.added_with) == len(hook.deleted_with)
    assert hook.deleted_with == [None] * len(hook.added_with)
    # Nothing is left on the updater; once the loop ran, the trainer's own
    # stop trigger is back.
    updater = trainer.updater
    assert updater.update.__func__ is type(updater).update
    if entered:
        assert type(trainer.stop_trigger) is triggers.IntervalTrigger


def test_hooks_main_model_during_training(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.run()
    model = trainer.updater.get_optimizer('main').target
    # Classifier, MLP, l1, l2 once per iteration for 4 iterations.
    assert len(hook.calls) == 16
    assert {id(link) for link, _ in hook.calls} == {
        id(link) for link in model.links()}
    assert hook.post == 16
    assert hook.added_with == [None]
    assert_released(hook, trainer)


def test_other_models_in_same_thread_not_hooked(trainer_factory):
    other = MLP()
    seen = []

    @training.make_extension(trigger=(1, 'iteration'))
    def call_other(trainer):
        other(numpy.zeros((1, 4), numpy.float32))
        seen.extend(link for link, _ in hook.calls)

    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.extend(call_other)
    trainer.run()
    assert seen
    assert not {id(x) for x in other.links()} & {id(x) for x in seen}


def test_scope_names_sub_tree(trainer_factory):
    trainer = trainer_factory()
    model = trainer.updater.get_optimizer('main').target
    hook = RecordingHook()
    ext = LinkHookExtension(hook, links=model.predictor.l1)
    assert ext.scope_link_names(trainer) == {
        id(model.predictor.l1): 'main/predictor/l1'}
    trainer.extend(ext)
    trainer.run()
    assert [link for link, _ in hook.calls] == [model.predictor.l1] * 4


def test_scope_names_whole_model(trainer_factory):
    trainer = trainer_factory()
    model = trainer.updater.get_optimizer('main').target
    names = LinkHookExtension(RecordingHook()).scope_link_names(trainer)
    assert sorted(names.values()) == [
        'main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
    assert names[id(model.predictor)] == 'main/predictor'


@pytest.mark.parametrize('train,eval,expected', [
    (True, True, {True, False}),
    (True, False, {True}),
    (False, True, {False}),
])
def test_mode_gating_with_evaluator(trainer_factory, train, eval, expected):
    trainer = trainer_factory(evaluator=True)
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook, train=train, eval=eval))
    trainer.run()
    assert {mode for _, mode in hook.calls} == expected
    assert hook.post == len(hook.calls)
    assert_released(hook, trainer)


def test_chainer_timer_hook_is_wrapped(trainer_factory):
    trainer = trainer_factory()
    hook = TimerHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.run()
    summary = hook.summary()
    assert summary['Linear']['occurrence'] == 8
    assert summary['Classifier']['occurrence'] == 4
    assert registered_hooks(trainer.updater.get_optimizer('main').target) \
        == []


def test_same_hook_name_registered_twice(trainer_factory):
    trainer = trainer_factory()
    first, second = RecordingHook(), RecordingHook()
    ext1 = LinkHookExtension(first)
    ext2 = LinkHookExtension(second)
    names = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        names.append(sorted(hook_keys(chainer._get_link_hooks())))

    trainer.extend(ext1)
    trainer.extend(ext2)
    trainer.extend(look)
    trainer.run()
    assert names[0] == ['chainer_hookext.RecordingHook',
                        'chainer_hookext.RecordingHook_1']
    assert len(first.calls) == len(second.calls) == 16
    assert_released(first, trainer)
    assert_released(second, trainer)


def test_users_plain_hook_name_stays_free(trainer_factory):
    # The user's own `with TimerHook():` inside training, beside ours.
    trainer = trainer_factory()
    ext = LinkHookExtension(chainer.link_hooks.TimerHook())
    model = trainer.updater.get_optimizer('main').target
    users = chainer.link_hooks.TimerHook()

    @training.make_extension(trigger=(1, 'iteration'))
    def time_it_myself(trainer):
        with users:
            model.predictor(numpy.zeros((1, 4), numpy.float32))

    trainer.extend(ext)
    trainer.extend(time_it_myself)
    trainer.run()
    assert len(users.call_history) == 4 * 3
    assert len(ext.hook.call_history) > 0


def test_user_global_hook_with_same_name_is_kept(trainer_factory):
    trainer = trainer_factory()
    user_hook = RecordingHook()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    with user_hook:
        trainer.run()
        assert chainer._get_link_hooks() == {'RecordingHook': user_hook}
    assert len(hook.calls) == 16
    assert_released(hook, trainer)


def test_release_on_forward_exception(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    model = trainer.updater.get_optimizer('main').target
    model.predictor.l2.forward = raise_boom
    with pytest.raises(Boom):
        trainer.run(show_loop_exception_msg=False)
    assert hook.calls
    assert_released(hook, trainer)


def test_release_on_updater_exception(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.updater.update_core = raise_boom
    with pytest.raises(Boom):
        trainer.run(show_loop_exception_msg=False)
    assert hook.added_with == [None]
    assert_released(hook, trainer)


def test_release_on_other_extension_call_exception(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.extend(raise_boom, trigger=(2, 'iteration'), name='boom')
    with pytest.raises(Boom):
        trainer.run(show_loop_exception_msg=False)
    assert len(hook.calls) == 8
    assert_released(hook, trainer)


def test_release_on_keyboard_interrupt(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()

    def interrupt(trainer):
        raise KeyboardInterrupt

    trainer.extend(LinkHookExtension(hook))
    trainer.extend(interrupt, name='interrupt')
    with pytest.raises(KeyboardInterrupt):
        trainer.run()
    assert hook.added_with == [None]
    assert_released(hook, trainer)


@pytest.mark.parametrize('priority', [1000, -1000])
def test_release_when_other_initialize_raises(trainer_factory, priority):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.extend(FailingInit(), priority=priority)
    with pytest.raises(Boom):
        trainer.run()
    assert hook.added_with == []
    assert_released(hook, trainer, entered=False)
    # The model can be called afterwards with no hook firing, and an update
    # outside Trainer.run does not register the hook either.
    model = trainer.updater.get_optimizer('main').target
    model.predictor(numpy.zeros((1, 4), numpy.float32))
    trainer.updater.update()
    assert hook.calls == []
    assert_released(hook, trainer, entered=False)


def test_release_when_before_training_extension_raises(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.extend(raise_boom, name='boom', call_before_training=True)
    with pytest.raises(Boom):
        trainer.run()
    assert_released(hook, trainer, entered=False)


def test_failed_run_can_be_retried(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    fail = [True]

    class FailOnce(training.Extension):
        def initialize(self, trainer):
            if fail.pop():
                raise Boom('initialize')

        def __call__(self, trainer):
            pass

    trainer.extend(LinkHookExtension(hook))
    trainer.extend(FailOnce(), priority=-1000)
    fail.append(False)
    fail.reverse()
    with pytest.raises(Boom):
        trainer.run()
    trainer.run()
    assert len(hook.calls) == 16
    assert hook.added_with == [None]
    assert_released(hook, trainer)


def test_finalize_and_on_error_are_idempotent(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    ext = LinkHookExtension(hook)
    ext.initialize(trainer)
    ext.on_error(trainer, Boom(), None)
    ext.finalize()
    ext.finalize()
    assert_released(hook, trainer)


def test_hook_in_two_extensions_is_refused(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook), name='first')
    trainer.extend(LinkHookExtension(hook), name='second')
    with pytest.raises(ValueError, match='already owned'):
        trainer.run()
    assert_released(hook, trainer, entered=False)
    # Another trainer may take the hook after the failed run.
    other = trainer_factory()
    other.extend(LinkHookExtension(hook))
    other.run()
    assert len(hook.calls) == 16
    assert_released(hook, other)


def test_hook_already_registered_by_user_is_refused(trainer_factory):
    trainer = trainer_factory()
    hook = RecordingHook()
    trainer.extend(LinkHookExtension(hook))
    with hook:
        with pytest.raises(ValueError, match='already registered'):
            trainer.run()
        assert chainer._get_link_hooks() == {'RecordingHook': hook}


def test_hook_of_ours_in_a_with_block_is_refused(trainer_factory):
    trainer = trainer_factory()
    hook = chainer_hookext.TimerHook()
    trainer.extend(LinkHookExtension(hook))
    with hook:  # a listener of the package's one entry
        with pytest.raises(ValueError, match='already registered'):
            trainer.run()
        assert _registry.registered(chainer._get_link_hooks()) == {
            'chainer_hookext.TimerHook': hook}


def test_default_name():
    assert LinkHookExtension(TimerHook()).default_name == \
        'LinkHookExtension_TimerHook'


def test_not_a_link_hook():
    with pytest.raises(TypeError, match=r'hook=<object object'):
        LinkHookExtension(object())


@pytest.mark.parametrize('links', [0, [], ['l1'], 'main'])
def test_links_not_links(links):
    with pytest.raises(TypeError, match=re.escape('links=' + repr(links))):
        LinkHookExtension(RecordingHook(), links=links)


def test_no_mode():
    with pytest.raises(ValueError, match='train=False, eval=False'):
        LinkHookExtension(RecordingHook(), train=False, eval=False)


class MyExtension(LinkHookExtension):
    pass


@pytest.mark.parametrize('cls', [LinkHookExtension, MyExtension])
@pytest.mark.parametrize('kwargs,shown', [
    ({'train': 'no'}, "train='no'"),
    ({'eval': 1}, 'eval=1'),
    ({'train': None}, 'train=None'),
])
def test_modes_need_true_or_false(cls, kwargs, shown):
    with pytest.raises(TypeError, match=re.escape(
            '`{}({})` is not a flag'.format(cls.__name__, shown))):
        cls(RecordingHook(), **kwargs)


def test_errors_name_the_class_called(trainer_factory):
    with pytest.raises(TypeError,
                       match=re.escape("`TimedLinks(links='l1')`")):
        TimedLinks(links='l1')
    with pytest.raises(TypeError,
                       match=re.escape("`MyExtension(links='l1')`")):
        MyExtension(RecordingHook(), links='l1')
    with pytest.raises(TypeError, match=re.escape('`MyExtension(hook=3)`')):
        MyExtension(3)
    stranger = L.Linear(2, 2)
    for ext in (TimedLinks(links=stranger),
                MyExtension(RecordingHook(), links=stranger)):
        trainer = trainer_factory()
        trainer.extend(ext)
        with pytest.raises(ValueError, match=re.escape(
                '{}(links=...): '.format(type(ext).__name__))):
            trainer.run()


@pytest.mark.parametrize('make', [
    chainer.link_hooks.SpectralNormalization,
    chainer.link_hooks.WeightStandardization,
])
def test_hook_needing_its_link_is_refused(make):
    # Chainer calls a global hook's added(None): these need their link (and
    # change its weights), so they belong to the model, not to an extension.
    with pytest.raises(TypeError, match=r'`MyExtension\(hook=.*needs that '
                       r'link in `added\(link\)`.*link\.add_hook\(hook\)'):
        MyExtension(make())


def test_link_not_in_model(trainer_factory):
    trainer = trainer_factory()
    stranger = L.Linear(2, 2)
    trainer.extend(LinkHookExtension(RecordingHook(), links=stranger))
    with pytest.raises(ValueError, match='is not part of the model'):
        trainer.run()


def test_no_main_optimizer(tmp_path):
    model = L.Classifier(MLP())
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator([], 1)
    updater = training.updaters.StandardUpdater(
        it, {'gen': optimizer})
    trainer = training.Trainer(updater, (1, 'iteration'), out=str(tmp_path))
    ext = LinkHookExtension(RecordingHook())
    with pytest.raises(ValueError, match=r"no `main` optimizer.*\['gen'\]"):
        ext.initialize(trainer)
    ext = LinkHookExtension(RecordingHook(), links=model.predictor)
    ext.initialize(trainer)
    assert sorted(ext.scope_link_names(trainer).values()) == [
        'gen/predictor', 'gen/predictor/l1', 'gen/predictor/l2']
    ext.finalize()


class CountingHook(chainer.LinkHook):
    """A hook with state to serialize."""

    name = 'CountingHook'

    def __init__(self):
        self.count = 0

    def forward_postprocess(self, args):
        self.count += 1

    def serialize(self, serializer):
        self.count = serializer('count', self.count)


def test_snapshot_round_trip(trainer_factory, tmp_path):
    trainer = trainer_factory(stop=(3, 'iteration'))
    hook = CountingHook()
    trainer.extend(LinkHookExtension(hook))
    trainer.extend(extensions.snapshot(), trigger=(3, 'iteration'))
    trainer.run()
    assert hook.count == 12

    resumed = trainer_factory(stop=(5, 'iteration'))
    hook2 = CountingHook()
    resumed.extend(LinkHookExtension(hook2))
    chainer.serializers.load_npz(
        str(tmp_path / 'result' / 'snapshot_iter_3'), resumed)
    assert hook2.count == 12
    resumed.run()
    assert hook2.count == 20


# Chainer's IntervalTrigger warns that a snapshot lacks its state: expected
# for an extension added after the snapshot was taken.
@pytest.mark.filterwarnings('ignore:The previous value of:UserWarning')
def test_snapshot_without_extension_warns_and_starts_fresh(
        trainer_factory, tmp_path):
    trainer = trainer_factory(stop=(2, 'iteration'))
    trainer.extend(extensions.snapshot(), trigger=(2, 'iteration'))
    trainer.run()

    resumed = trainer_factory(stop=(3, 'iteration'))
    hook = CountingHook()
    resumed.extend(LinkHookExtension(hook))
    with pytest.warns(RuntimeWarning, match='Starting the hook fresh'):
        chainer.serializers.load_npz(
            str(tmp_path / 'result' / 'snapshot_iter_2'), resumed)
    assert hook.count == 0
    resumed.run()
    assert hook.count == 4


def test_callback_hook_in_extension(trainer_factory):
    trainer = trainer_factory(evaluator=True)
    seen = []
    hook = CallbackHook(
        posthook=lambda link, args, kwargs, out: seen.append(
            (link.name, out.shape)), eval=False)
    trainer.extend(LinkHookExtension(hook, links=(
        trainer.updater.get_optimizer('main').target.predictor.l2,)))
    trainer.run()
    assert seen == [('l2', (8, 3))] * 4


# -- hooks that filter by themselves (ScopedLinkHook) ----------------------

@pytest.mark.parametrize('make,itself', [
    (lambda: CallbackHook(lambda link, args, kwargs: None), True),
    (RecordingHook, False),  # behind the filtering proxy
])
def test_scoped_hook_is_registered_itself(trainer_factory, make, itself):
    trainer = trainer_factory()
    hook = make()
    ext = LinkHookExtension(hook)
    registered = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        hooks = chainer._get_link_hooks()
        registered.append(
            (hook_keys(hooks) == [ext.registered_name],
             _registry.registered(hooks).get(ext.registered_name) is hook))

    trainer.extend(ext)
    trainer.extend(look)
    trainer.run()
    assert registered == [(True, itself)] * 4
    assert ext.registered_name is None


@pytest.mark.parametrize('own,scope,expected', [
    ((True, True), (True, False), {True}),
    ((True, True), (False, True), {False}),
    ((True, False), (True, True), {True}),
    ((False, True), (True, True), {False}),
    ((False, True), (False, True), {False}),
])
def test_extension_modes_narrow_the_hooks_own(
        trainer_factory, own, scope, expected):
    trainer = trainer_factory(evaluator=True)
    modes = set()
    hook = CallbackHook(
        prehook=lambda link, args, kwargs: modes.add(chainer.config.train),
        train=own[0], eval=own[1])
    trainer.extend(LinkHookExtension(hook, train=scope[0], eval=scope[1]))
    trainer.run()
    assert modes == expected


def test_no_mode_in_common_is_refused(trainer_factory):
    trainer = trainer_factory()
    hook = CallbackHook(print, train=False)
    trainer.extend(LinkHookExtension(hook, eval=False))
    with pytest.raises(ValueError, match=re.escape(
            '`CallbackHook.set_scope(train=True, eval=False)` leaves no '
            'mode')):
        trainer.run()
    assert registered_hooks(trainer.updater.get_optimizer('main').target) \
        == []


def test_debug_hook_keeps_its_own_modes(trainer_factory):
    # CaptureOutputsHook captures in training mode only by default; the
    # extension's default (both modes) does not widen that.
    trainer = trainer_factory()
    model = trainer.updater.get_optimizer('main').target
    hook = CaptureOutputsHook()
    trainer.extend(LinkHookExtension(hook, links=model.predictor.l2))
    eval_batches = chainer.iterators.SerialIterator(
        make_dataset(5), 5, repeat=False, shuffle=False)
    trainer.extend(extensions.Evaluator(eval_batches, model),
                   trigger=(4, 'iteration'))
    trainer.run()
    # The training batches hold 8 examples, the evaluation batch 5.
    assert hook.outputs['main/predictor/l2'].shape == (8, 3)

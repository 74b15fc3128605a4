"""Adding this package's hooks to Chainer's registries; what a pickle or a
copy of an optimizer holding one holds."""

import copy
import pickle

import chainer
import pytest
from chainer import optimizer_hooks
from chainer import training

import chainer_hookext
from chainer_hookext import _registry
from tests.conftest import MLP
from tests.conftest import make_dataset


class Counting(_registry.OptimizerHook):

    def __init__(self):
        self.calls = 0

    def __call__(self, optimizer):
        self.calls += 1


def _optimizer():
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(chainer.links.Classifier(MLP()))
    optimizer.add_hook(optimizer_hooks.WeightDecay(1e-4), name='decay')
    optimizer.add_hook(optimizer_hooks.GradientClipping(1.0), name='clip')
    return optimizer


def _hooks(optimizer):
    hookable = optimizer._hookable
    return (list(hookable._pre_update_hooks.items()),
            list(hookable._post_update_hooks.items()))


COPIES = {
    'pickle': lambda o: pickle.loads(pickle.dumps(o)),
    'deepcopy': copy.deepcopy,
}


@pytest.mark.parametrize('how', list(COPIES))
@pytest.mark.parametrize('timing', ['pre', 'post'])
def test_copy_of_an_optimizer_holds_nothing_of_ours(how, timing):
    optimizer = _optimizer()
    hook = Counting()
    handle = _registry.add_optimizer_hook(
        optimizer, hook, 'x', timing, first=True)
    copied = COPIES[how](optimizer)
    pre, post = _hooks(copied)
    assert [k for k, _ in pre] == ['decay', 'clip'] and post == []
    assert '__setstate__' not in vars(copied._hookable)
    assert type(copied._hookable) is type(optimizer._hookable)
    assert copied._hookable.optimizer is copied
    # The original is unchanged, its hook still runs.
    assert [k for k, _ in _hooks(optimizer)[timing == 'post']][0] == (
        'chainer_hookext.x')
    model = optimizer.target
    x, t = chainer.dataset.concat_examples(
        [(chainer.numpy.zeros(4, 'f'), 0)] * 2)
    optimizer.update(model, x, t)
    assert hook.calls == 1
    _registry.remove_optimizer_hook(handle)
    assert [k for k, _ in _hooks(optimizer)[0]] == ['decay', 'clip']


def test_two_hooks_of_ours_and_a_copy_of_a_copy():
    optimizer = _optimizer()
    for name in ('a', 'b'):
        _registry.add_optimizer_hook(optimizer, Counting(), name, 'pre')
    copied = copy.deepcopy(pickle.loads(pickle.dumps(optimizer)))
    assert [k for k, _ in _hooks(copied)[0]] == ['decay', 'clip']


def test_hook_pickled_alone_does_nothing():
    assert pickle.loads(pickle.dumps(Counting())) is _registry.INERT


def test_save_restore_cycles_add_no_hook(tmp_path):
    # A GAN-like loop: the optimizer pickled during training, restored,
    # trained again with the extensions, pickled again.
    optimizer = None
    for cycle in range(3):
        if optimizer is None:
            optimizer = chainer.optimizers.SGD()
            optimizer.setup(chainer.links.Classifier(MLP()))
        it = chainer.iterators.SerialIterator(make_dataset(), 8)
        trainer = training.Trainer(
            training.updaters.StandardUpdater(it, optimizer),
            (2, 'iteration'), out=str(tmp_path))
        seen = []

        @training.make_extension(trigger=(1, 'iteration'))
        def save(trainer):
            opt = trainer.updater.get_optimizer('main')
            seen.append([k for k, _ in _hooks(opt)[0]])
            seen.append(pickle.dumps(opt))
        trainer.extend(save)
        trainer.extend(chainer_hookext.NonFiniteGuard(backward=True))
        trainer.run()
        assert seen[0] == ['chainer_hookext.NonFiniteGuard']
        optimizer = pickle.loads(seen[-1])
        assert _hooks(optimizer) == ([], [])


def test_inert_hooks_of_an_older_pickle_are_removed_at_the_next_add():
    optimizer = _optimizer()
    for key in ('chainer_hookext.x', 'chainer_hookext.x_1'):
        optimizer.add_hook(_registry.InertOptimizerHook(), name=key)
    _registry.add_optimizer_hook(optimizer, Counting(), 'x', 'pre')
    assert [k for k, _ in _hooks(optimizer)[0]] == [
        'decay', 'clip', 'chainer_hookext.x']


class Owner(object):
    """An object whose class sets its own state."""

    def __init__(self):
        self.hooks = {'user': 1}

    def __setstate__(self, state):
        state['restored'] = True
        vars(self).update(state)


def test_put_back_leaves_the_owners_own_setstate_to_it():
    from chainer_hookext import _copies
    owner = Owner()
    hook = Counting()
    hook.registered_in = owner
    owner.hooks['ours'] = hook
    for copied in (pickle.loads(pickle.dumps(owner)), copy.deepcopy(owner)):
        assert vars(copied) == {'hooks': {'user': 1}, 'restored': True}
    assert _copies.same(owner) is owner

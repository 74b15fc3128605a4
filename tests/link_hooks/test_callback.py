import chainer
import chainer.links as L
import numpy
import pytest

from chainer_hookext import CallbackHook
from chainer_hookext import ScopedLinkHook
from tests.conftest import MLP


def call(link, train=True):
    with chainer.using_config('train', train):
        return link(numpy.ones((2, 3), numpy.float32))


def test_prehook_and_posthook_get_link_args_and_out():
    link = L.Linear(3, 4)
    log = []
    hook = CallbackHook(
        prehook=lambda lk, a, k: log.append(('pre', lk, a[0].shape, k)),
        posthook=lambda lk, a, k, out: log.append(('post', lk, out.shape)))
    with hook:
        out = call(link)
    assert log == [('pre', link, (2, 3), {}), ('post', link, (2, 4))]
    assert out.shape == (2, 4)


@pytest.mark.parametrize('scoped', [False, True])
@pytest.mark.parametrize('train,eval,fired', [
    (True, True, [True, False]),
    (True, False, [True]),
    (False, True, [False]),
])
def test_mode_gating(train, eval, fired, scoped):
    modes = []
    hook = CallbackHook(
        prehook=lambda lk, a, k: modes.append(chainer.config.train),
        train=train, eval=eval)
    if scoped:
        # A scope in both modes narrows the hook's own, never widens them.
        hook.set_scope(None, train=True, eval=True)
    link = L.Linear(3, 4)
    with hook:
        call(link, train=True)
        call(link, train=False)
    assert modes == fired


def test_only_posthook():
    outs = []
    with CallbackHook(posthook=lambda lk, a, k, o: outs.append(o)):
        call(L.Linear(3, 1))
    assert len(outs) == 1


def test_name():
    assert CallbackHook(print).name == 'CallbackHook'
    assert CallbackHook(print, name='probe').name == 'probe'


def test_needs_a_callable():
    with pytest.raises(ValueError, match='has nothing to call'):
        CallbackHook()
    with pytest.raises(TypeError, match=r"prehook=3\b"):
        CallbackHook(prehook=3)
    with pytest.raises(TypeError, match=r"posthook='x'"):
        CallbackHook(posthook='x')
    with pytest.raises(ValueError, match='would never fire'):
        CallbackHook(print, train=False, eval=False)


class MyCallback(CallbackHook):
    pass


@pytest.mark.parametrize('cls', [CallbackHook, MyCallback])
@pytest.mark.parametrize('kwargs,shown,error', [
    ({'name': 3}, 'name=3', TypeError),
    ({'name': ''}, "name=''", ValueError),
    ({'train': 'yes'}, "train='yes'", TypeError),
])
def test_name_and_flags_are_checked(cls, kwargs, shown, error):
    with pytest.raises(error, match=r'`{}\({}\)` is not a '
                       .format(cls.__name__, shown)):
        cls(print, **kwargs)


def test_errors_name_the_class_called():
    with pytest.raises(TypeError, match=r'`MyCallback\(prehook=3\)`'):
        MyCallback(prehook=3)
    with pytest.raises(ValueError, match=r'`MyCallback\(prehook=None, '):
        MyCallback()


def test_is_a_scoped_link_hook():
    assert isinstance(CallbackHook(print), ScopedLinkHook)


def test_scope_limits_the_links():
    model = MLP()
    names = []
    hook = CallbackHook(posthook=lambda lk, a, k, o: names.append(lk.name))
    hook.set_scope({id(model.l1): 'net/l1'})
    with hook:
        model(numpy.ones((2, 4), numpy.float32))
    assert names == ['l1']

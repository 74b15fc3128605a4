import collections
import gc
import weakref

import chainer
import chainer.links as L
import numpy
import pytest

from chainer_hookext import CaptureOutputsHook
from tests.conftest import MLP


def check_keeps_latest_detached(xp):
    device = chainer.get_device('@numpy' if xp == 'numpy' else '@cupy:0')
    model = MLP()
    model.to_device(device)
    hook = CaptureOutputsHook()
    with hook:
        model(device.send(numpy.zeros((1, 4), numpy.float32)))
        y = model(device.send(numpy.ones((2, 4), numpy.float32)))
    assert list(hook.outputs) == ['MLP/l1', 'MLP/l2', 'MLP']
    out = hook.outputs['MLP']
    assert isinstance(out, device.supported_array_types)
    assert out is y.array and out.shape == (2, 3)
    # The graph is not kept: the output's creator node dies with y.
    node = weakref.ref(y.creator_node)
    del y
    gc.collect()
    assert node() is None


def test_keeps_latest_detached():
    check_keeps_latest_detached('numpy')


@pytest.mark.gpu
def test_keeps_latest_detached_gpu():
    check_keeps_latest_detached('cupy')


Pair = collections.namedtuple('Pair', 'h c')


class Structured(chainer.Link):
    def forward(self, x):
        v = chainer.Variable(x)
        return {'pair': Pair(v, v * 2), 'list': [v, 3], 'none': None}


def test_detaches_through_structures():
    hook = CaptureOutputsHook()
    x = numpy.ones((1, 2), numpy.float32)
    with hook:
        Structured()(x)
    out = hook.outputs['Structured']
    assert isinstance(out['pair'], Pair)
    assert out['pair'].h is x
    numpy.testing.assert_array_equal(out['pair'].c, x * 2)
    assert out['list'][0] is x and out['list'][1] == 3
    assert out['none'] is None


def test_copy():
    hook = CaptureOutputsHook(copy=True)
    x = numpy.ones((1, 2), numpy.float32)
    with hook:
        Structured()(x)
    kept = hook.outputs['Structured']['list'][0]
    assert kept is not x
    x[...] = 5
    assert (kept == 1).all()


def test_train_mode_only_by_default_and_clear():
    hook = CaptureOutputsHook()
    link = L.Linear(2, 1)
    with hook:
        with chainer.using_config('train', False):
            link(numpy.ones((1, 2), numpy.float32))
        assert hook.outputs == {}
        link(numpy.ones((3, 2), numpy.float32))
    assert hook.outputs['Linear'].shape == (3, 1)
    hook.clear()
    assert hook.outputs == {}


def test_never_fires():
    with pytest.raises(ValueError, match=r'`CaptureOutputsHook\('
                                         r'train=False, eval=False\)`'):
        CaptureOutputsHook(train=False)


@pytest.mark.parametrize('kwargs,shown', [
    ({'copy': 'no'}, "copy='no'"), ({'eval': 'no'}, "eval='no'")])
def test_flags_need_true_or_false(kwargs, shown):
    with pytest.raises(TypeError, match=r'`CaptureOutputsHook\({}\)` is '
                                        'not a flag'.format(shown)):
        CaptureOutputsHook(**kwargs)


def test_scope():
    model = MLP()
    hook = CaptureOutputsHook(eval=True)
    hook.set_scope({id(model.l2): 'main/predictor/l2'}, train=True,
                   eval=True)
    with hook:
        model(numpy.ones((1, 4), numpy.float32))
    assert list(hook.outputs) == ['main/predictor/l2']

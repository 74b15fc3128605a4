"""Every node class of Chainer has a formula or a reason not to, and the
nodes of every link, of the vision models and of more functions are
counted."""

import importlib
import inspect
import pathlib
import pkgutil

import chainer
from chainer import function
from chainer import function_node
import chainer.functions as F
import chainer.links as L
from chainer.links.loss import hierarchical_softmax
import numpy
import pytest

from chainer_hookext.costs import flops
from tests.costs.test_flops import LAYERS_AND_FUNCTIONS
from tests.costs.test_flops import CheckMemo
from tests.costs.test_flops import Counted
from tests.costs.test_flops import back_propagate
from tests.costs.test_flops import evaluated
from tests.costs.test_flops import labels
from tests.costs.test_flops import variable


def chainer_node_classes():
    """Every FunctionNode and old-style Function class that chainer.functions
    (and chainer.links, which defines one) defines."""
    names = [m.name for m in pkgutil.walk_packages(
        chainer.functions.__path__, 'chainer.functions.')]
    names.append(hierarchical_softmax.__name__)
    classes = set()
    for name in names:
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (inspect.isclass(obj) and obj.__module__ == name
                    and issubclass(obj, (function_node.FunctionNode,
                                         function.Function))):
                classes.add(obj)
    return classes


def test_every_node_class_of_chainer_has_a_formula_or_a_reason():
    classes = chainer_node_classes()
    assert len(classes) > 250
    left = {cls.__qualname__ for cls in classes
            - set(flops.FORMULAS) - set(flops.NOT_COUNTED)}
    assert left == set()
    assert set(flops.FORMULAS) & set(flops.NOT_COUNTED) == set()
    assert all(reason for reason in flops.NOT_COUNTED.values())


def test_docs_list_every_node_class_of_chainer():
    docs = pathlib.Path(__file__).parents[2] / 'docs' / 'flops.md'
    text = docs.read_text(encoding='utf-8')
    missing = [cls.__name__ for cls in chainer_node_classes()
               if '| `{}` |'.format(cls.__name__) not in text]
    assert missing == []


def test_register_refuses_a_second_formula():
    with pytest.raises(ValueError, match=r'register\(LinearFunction\): '
                       r'LinearFunction has a formula already \(_linear\)'):
        flops.register(F.connection.linear.LinearFunction)


def test_register_a_formula_for_a_class_not_counted(monkeypatch):
    cls = F.math.einsum.EinSum  # listed again after the test
    monkeypatch.setitem(flops.NOT_COUNTED, cls, flops.NOT_COUNTED[cls])
    flops.register(cls)(lambda node, in_data: (7, 1))
    try:
        assert cls not in flops.NOT_COUNTED
        hook = Counted()
        with hook:
            F.einsum('ij,jk->ik', variable(2, 3), variable(3, 4))
        assert hook.rows == [('EinSum', flops.Cost(7, 4 * (6 + 12 + 1)))]
    finally:
        del flops.FORMULAS[cls]


def test_local_response_normalization():
    x = variable(2, 6, 3, 3)
    hook = Counted()
    with hook:
        y = F.local_response_normalization(x, n=5)
        F.sum(y).backward()
    n = x.size
    # x^2, 4 additions of the window, k + alpha s, the power, times x.
    assert hook.costs('LocalResponseNormalization') == [
        flops.Cost(9 * n, 4 * 2 * n)]
    # y gy / s, 4 additions, gy scale, 2 alpha beta x, times, minus.
    assert hook.costs('LocalResponseNormalizationGrad') == [
        flops.Cost(10 * n, 4 * 4 * n)]


def test_max_pad_tile_repeat():
    hook = Counted()
    with hook:
        F.max(variable(3, 4), axis=1)
        F.pad(variable(3, 4), ((1, 2), (0, 1)), 'constant')
        F.tile(variable(3, 4), (2, 1))
        F.repeat(variable(3, 4), 3, axis=0)
    assert hook.rows == [
        ('Max', flops.Cost(12, 4 * (12 + 3))),
        ('Pad', flops.Cost(0, 4 * (12 + 6 * 5))),
        ('Tile', flops.Cost(0, 4 * (12 + 24))),
        ('Repeat', flops.Cost(0, 4 * (12 + 36)))]


def links_of_chainer():
    tree = L.ChildSumTreeLSTM(3, 2)
    nary = L.NaryTreeLSTM(3, 2, n_ary=2)
    gru, peephole = L.StatefulGRU(3, 2), L.StatefulPeepholeLSTM(3, 2)
    zoneout = L.StatefulZoneoutLSTM(3, 3)
    counts = numpy.array([3, 2, 4, 1])
    tree_dict = L.BinaryHierarchicalSoftmax.create_huffman_tree(
        {0: 3, 1: 2, 2: 4, 3: 1})
    return (
        L.Bilinear(3, 2, 4)(variable(5, 3), variable(5, 2)),
        L.Bilinear(3, 2, 4, nobias=True)(variable(5, 3), variable(5, 2)),
        L.LocalConvolution2D(2, 3, in_size=4, ksize=2)(variable(1, 2, 4, 4)),
        L.SimplifiedDropconnect(3, 4)(variable(2, 3)),
        L.Maxout(3, 2, 3)(variable(2, 3)),
        L.Highway(3)(variable(2, 3)),
        gru(variable(2, 3)), gru(variable(2, 3)),
        L.StatelessMGU(3, 2)(variable(2, 2), variable(2, 3)),
        peephole(variable(2, 3)), peephole(variable(2, 3)),
        zoneout(variable(2, 3)), zoneout(variable(2, 3)),
        tree(None, None, variable(2, 3)),
        tree(variable(2, 2), variable(2, 2), variable(2, 2), variable(2, 2),
             variable(2, 3)),
        nary(variable(2, 2), variable(2, 2), variable(2, 2), variable(2, 2),
             variable(2, 3)),
        F.slstm(variable(2, 2), variable(2, 2), variable(2, 8),
                variable(2, 8)),
        L.NegativeSampling(3, counts, 2)(variable(2, 3),
                                         numpy.array([0, 2], 'i')),
        L.BinaryHierarchicalSoftmax(3, tree_dict)(
            variable(2, 3), numpy.array([0, 2], 'i')),
        L.BlackOut(3, counts, 2)(variable(2, 3), numpy.array([0, 2], 'i')),
        L.CRF1d(3)([variable(2, 3), variable(2, 3)],
                   [numpy.array([0, 1], 'i'), numpy.array([2, 1], 'i')]),
        L.DepthwiseConvolution2D(2, 2, 3)(variable(1, 2, 4, 4)),
        L.DilatedConvolution2D(2, 3, 3, dilate=2)(variable(1, 2, 5, 5)),
        L.MLPConvolution2D(2, (3, 2), 3)(variable(1, 2, 4, 4)),
        L.Inception(2, 1, 1, 2, 1, 2, 1)(variable(1, 2, 4, 4)),
        L.InceptionBN(2, 1, 1, 2, 1, 2, 'max', 1)(variable(2, 2, 4, 4)),
        L.Scale(W_shape=(3,))(variable(2, 3)),
        L.Bias(shape=(3,))(variable(2, 3)),
        L.PReLU()(variable(2, 3) - 1),
        L.Swish((3,))(variable(2, 3)),
        L.GroupNormalization(2, 4)(variable(2, 4, 3)),
        L.DecorrelatedBatchNormalization(4, groups=2)(variable(5, 4)),
        evaluated(L.DecorrelatedBatchNormalization(4, groups=2),
                  variable(5, 4)),
        L.BatchRenormalization(4)(variable(5, 4)),
        L.DeformableConvolution2D(2, 3, 3)(variable(1, 2, 5, 5)),
    )


#: More layers and functions whose every node, forward and backward (on a
#: CPU), has a formula: the links of chainer.links and the functions of
#: Chainer's examples.
MORE = {
    'links': links_of_chainer,
    'normalizations': lambda: (
        F.local_response_normalization(variable(2, 6, 3, 3)),
        F.normalize(variable(3, 4))),
    'activations': lambda: (
        F.clipped_relu(variable(3, 4), 0.4),
        F.crelu(variable(3, 4) - 1), F.hard_sigmoid(variable(3, 4)),
        F.rrelu(variable(3, 4) - 1),
        F.swish(variable(3, 4), variable(4))),
    'trigonometric': lambda: (
        F.sin(variable(3, 4)), F.cos(variable(3, 4)), F.tan(variable(3, 4)),
        F.arcsin(variable(3, 4)), F.arccos(variable(3, 4)),
        F.arctan(variable(3, 4)), F.arctan2(variable(3, 4), variable(3, 4)),
        F.sinh(variable(3, 4)), F.cosh(variable(3, 4)),
        F.arctanh(variable(3, 4))),
    'special': lambda: (
        F.erf(variable(3, 4)), F.erfc(variable(3, 4)),
        F.erfinv(variable(3, 4)), F.erfcinv(variable(3, 4)),
        F.erfcx(variable(3, 4)), F.digamma(variable(3, 4)),
        F.lgamma(variable(3, 4)), F.ndtr(variable(3, 4)),
        F.ndtri(variable(3, 4)), F.log_ndtr(variable(3, 4)),
        F.expm1(variable(3, 4)), F.log1p(variable(3, 4)),
        F.fmod(variable(3, 4), variable(3, 4) + 1),
        F.polygamma(numpy.ones((3, 4), 'i'), variable(3, 4)),
        F.zeta(numpy.full((3, 4), 2, 'f'), variable(3, 4)),
        F.linear_interpolate(variable(3, 4), variable(3, 4),
                             variable(3, 4))),
    'reductions': lambda: (
        F.max(variable(3, 4), axis=1), F.min(variable(3, 4)),
        F.argmax(variable(3, 4), axis=1), F.argmin(variable(3, 4)),
        F.prod(variable(3, 4), axis=0), F.cumsum(variable(3, 4), axis=1),
        F.cumprod(variable(3, 4), axis=1),
        F.logsumexp(variable(3, 4), axis=1),
        F.batch_l2_norm_squared(variable(3, 4)),
        F.fft((variable(3, 4), variable(3, 4)))),
    'arrays': lambda: (
        F.pad(variable(3, 4), 1, 'constant'),
        F.pad_sequence([variable(3, 4), variable(2, 4)]),
        F.tile(variable(3, 4), 2), F.repeat(variable(3, 4), 2),
        F.flip(variable(3, 4), 1), F.fliplr(variable(3, 4)),
        F.flipud(variable(3, 4)), F.moveaxis(variable(2, 3, 4), 0, 2),
        F.copy(variable(3, 4), -1), F.identity(variable(3, 4)),
        F.depth2space(variable(1, 4, 2, 2), 2),
        F.space2depth(variable(1, 1, 4, 4), 2),
        F.diagonal(variable(3, 4)),
        F.as_strided(variable(12), (3, 2), (2, 1)),
        F.im2col(variable(1, 2, 4, 4), 2),
        F.scatter_add(variable(3, 4), (slice(None), [0, 2]),
                      variable(3, 2)),
        F.shift(variable(1, 9, 4, 4)),
        F.spatial_transformer_sampler(
            variable(1, 2, 4, 4), F.spatial_transformer_grid(
                variable(1, 2, 3), (3, 3))),
        F.forget(lambda x: F.tanh(x) * 2, variable(3, 4))),
    'unpooling': lambda: (
        F.unpooling_2d(variable(1, 2, 2, 2), 2, cover_all=False),
        F.unpooling_nd(variable(1, 2, 2, 2, 2), 2, cover_all=False),
        F.upsampling_2d(variable(1, 2, 2, 2), numpy.zeros((1, 2, 2, 2),
                        'i'), 2, cover_all=False)),
    'examples': lambda: (  # vae, ptb, and the links not above
        F.bernoulli_nll(variable(3, 4), variable(3, 4)),
        F.gaussian_kl_divergence(variable(3, 4), variable(3, 4)),
        F.gaussian_nll(variable(3, 4), variable(3, 4), variable(3, 4)),
        L.StatelessLSTM(3, 2)(None, None, variable(2, 3)),
        L.StatefulMGU(3, 2)(variable(2, 3)),
        L.StatelessGRU(3, 2)(variable(2, 2), variable(2, 3))),
    'noise': lambda: (F.gaussian(variable(3, 4), variable(3, 4)),
                      F.zoneout(variable(3, 4), variable(3, 4))),
    'more losses': lambda: (
        F.huber_loss(variable(3, 4), variable(3, 4) * 2, 1.),
        F.huber_loss(variable(3, 4), variable(3, 4), 1., reduce='no'),
        F.contrastive(variable(3, 4), variable(3, 4) * 0, labels(3)),
        F.triplet(variable(3, 4), variable(3, 4), variable(3, 4) * 0),
        F.hinge(variable(3, 4), labels(3)).array,  # its backward writes gy
        F.cross_covariance(variable(3, 4), variable(3, 2)),
        F.decov(variable(3, 4)),
        F.squared_error(variable(3, 4), variable(3, 4)),
        F.absolute_error(variable(3, 4), variable(3, 4) * 2),
        F.mean_absolute_error(variable(3, 4), variable(3, 4) * 2),
        F.binary_accuracy(variable(3, 4), labels(3, 4)),
        F.r2_score(variable(3, 4), variable(3, 4) * 2),
        summary()),
}


def summary():
    with numpy.errstate(invalid='ignore'):  # 0 / 0: a label not predicted
        return F.classification_summary(variable(3, 4), labels(3))[0]


@pytest.mark.filterwarnings('ignore::DeprecationWarning')
@pytest.mark.parametrize('name', sorted(MORE))
def test_every_node_of_more_layers_and_functions_is_counted(name):
    hook = Counted()
    with hook:
        back_propagate(MORE[name]())
    assert [n for n, cost in hook.rows if cost is None] == []
    assert len(hook.rows) > 5


#: The memoized classes only a GPU applies (cuDNN's) or a double backward,
#: and resize_images, which fails with NumPy 1.24 or later (numpy.float).
NOT_RUN_HERE = {'RsqrtGPU', 'ReLUGradCudnn', 'DropoutGradCuDNN',
                'CudnnRNNWeightConcat', 'ClippedReLUGrad3', '_MulInvStd',
                'ResizeImages', 'ResizeImagesGrad'}


def test_resize_images_from_its_nodes():
    x = numpy.zeros((1, 2, 3, 3), numpy.float32)
    node = F.array.resize_images.ResizeImages((5, 4), 'bilinear', False)
    # A weighted sum of 4 inputs per output: 4 products, 3 additions.
    assert flops.count(node, (x,)) == flops.Cost(7 * 40, 4 * (18 + 40))
    grad = F.array.resize_images.ResizeImagesGrad(
        x.shape, (5, 4), 'bilinear', False)
    gy = numpy.zeros((1, 2, 5, 4), numpy.float32)
    assert flops.count(grad, (gy,)) == flops.Cost(8 * 40, 4 * (40 + 18))


@pytest.mark.filterwarnings('ignore::DeprecationWarning')
def test_memoized_costs_of_the_layers_and_functions_depend_on_the_key():
    hook = CheckMemo()
    functions = dict(LAYERS_AND_FUNCTIONS, **MORE)
    with hook:
        for _ in range(2):
            for name in sorted(functions):
                back_propagate(functions[name]())
    memoized = {cls.__name__ for cls, (_, keyed_by) in flops.FORMULAS.items()
                if keyed_by is not None}
    assert memoized - hook.checked == NOT_RUN_HERE


def vision_models():
    x = numpy.zeros((1, 3, 224, 224), numpy.float32)  # GoogLeNet's size
    small = numpy.zeros((2, 3, 32, 32), numpy.float32)  # 2: for BN
    return [
        ('VGG16Layers', lambda: L.VGG16Layers(None)(small, ['pool5'])),
        ('ResNet50Layers', lambda: L.ResNet50Layers(None)(small, ['prob'])),
        ('GoogLeNet', lambda: L.GoogLeNet(None)(
            x, ['prob', 'loss1_fc2', 'loss2_fc2'])),
    ]


@pytest.mark.parametrize('name, run', vision_models())
def test_every_node_of_the_vision_models_is_counted(name, run):
    hook = Counted()
    with hook:
        outputs = run()
        F.sum(F.stack([F.sum(y) for y in outputs.values()])).backward()
    assert [n for n, cost in hook.rows if cost is None] == []
    assert {'LocalResponseNormalization', 'LocalResponseNormalizationGrad',
            'Concat'} <= {n for n, _ in hook.rows} or name != 'GoogLeNet'

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext.memory import buffers
from chainer_hookext.memory import graph
from chainer_hookext.memory.graph import KeptBuffer
from tests.memory.conftest import LOSS
from tests.memory.conftest import Nodes
from tests.memory.conftest import trace


def batch(*shape):
    return numpy.ones(shape, numpy.float32)


# -- real forwards, through a MemoryTracer ------------------------------------

def test_linear_fed_the_batch_keeps_nothing():
    link = L.Linear(3, 4)
    x = batch(5, 3)
    # It retains x (the batch) and W (a parameter): both leaves.
    assert trace({'l': link}, lambda: link(x)).activations == {None: LOSS}
    v = chainer.Variable(x)
    assert trace({'l': link}, lambda: link(v)).activations == {None: LOSS}


def test_linear_fed_a_batch_of_images_keeps_nothing():
    link = L.Linear(12, 2)
    x = batch(5, 3, 4)
    # F.linear retains a reshape of the batch: a view of a leaf.
    assert trace({'l': link}, lambda: link(x)).activations == {None: LOSS}


def test_a_view_of_the_batch_made_by_a_node_is_the_batch():
    link = L.Linear(4, 2)
    x = batch(5, 3, 4)
    tracer = trace({'l': link}, lambda: link(F.reshape(x, (15, 4))))
    assert tracer.activations == {None: LOSS}


def test_linear_fed_a_node_output_keeps_that_input():
    first, second = L.Linear(3, 4), L.Linear(4, 2)
    x = batch(5, 3)
    tracer = trace({'first': first, 'second': second},
                   lambda: second(first(x)))
    # second retains first's output: 5 * 4 float32.
    assert tracer.activations == {'second': 5 * 4 * 4, None: LOSS}


def test_convolution_retains_its_input():
    c1 = L.Convolution2D(2, 3, 3, pad=1)
    c2 = L.Convolution2D(3, 4, 3, pad=1)
    x = batch(2, 2, 5, 5)
    tracer = trace({'c1': c1, 'c2': c2}, lambda: c2(c1(x)))
    # c2 retains x and W: c1's output, 2 * 3 * 5 * 5 float32; W is a
    # parameter.  c1 retains the batch and its W: nothing.
    assert tracer.activations == {'c2': 2 * 3 * 5 * 5 * 4, None: LOSS}


def test_batch_normalization_in_training():
    conv = L.Convolution2D(2, 3, 3, pad=1)
    bn = L.BatchNormalization(3)
    x = batch(2, 2, 5, 5)
    tracer = trace({'conv': conv, 'bn': bn}, lambda: bn(conv(x)))
    # Chainer 7.8.1's BatchNormalization node retains x and gamma (a
    # parameter) and stores mean, var and inv_std, 3 float32 each;
    # running_mean and running_var are bn's avg_mean and avg_var.
    assert tracer.activations == {
        'bn': 2 * 3 * 5 * 5 * 4 + 3 * (3 * 4), None: LOSS}


def test_relu_keeps_its_output():
    conv = L.Convolution2D(2, 3, 3, pad=1)
    x = batch(2, 2, 5, 5)
    tracer = trace({'conv': conv}, lambda: F.relu(conv(x)))
    # Outside every link: its output, 2 * 3 * 5 * 5 float32.
    assert tracer.activations == {None: 2 * 3 * 5 * 5 * 4 + LOSS}


def test_dropout_keeps_its_mask():
    conv = L.Convolution2D(2, 3, 3, pad=1)
    x = batch(2, 2, 5, 5)
    tracer = trace({'conv': conv}, lambda: F.dropout(conv(x)))
    # The mask: float32, the input's shape; the input is not retained.
    assert tracer.activations == {None: 2 * 3 * 5 * 5 * 4 + LOSS}


def test_a_forget_block_keeps_only_its_inputs():
    l0, l1, l2 = L.Linear(3, 3), L.Linear(3, 6), L.Linear(6, 2)
    x = batch(5, 3)
    links = {'l0': l0, 'l1': l1, 'l2': l2}
    tracer = trace(links, lambda: l2(F.relu(l1(l0(x)))))
    # l1 retains l0's output (5 * 3 float32), relu its output (5 * 6).
    assert tracer.activations == {'l1': 5 * 3 * 4, None: 5 * 6 * 4 + LOSS}
    tracer = trace(links, lambda: l2(
        F.forget(lambda h: F.relu(l1(h)), l0(x))))
    # Forget (outside every link) retains its input, l0's output; l2 its
    # input, Forget's output; l1 and relu, run without backprop, nothing.
    assert tracer.activations == {None: 5 * 3 * 4 + LOSS, 'l2': 5 * 6 * 4}


def test_nodes_are_charged_to_the_innermost_link():
    model = chainer.Sequential(L.Linear(3, 4), F.relu, L.Linear(4, 2))
    links = {'m': model, 'm/0': model[0], 'm/2': model[2]}
    tracer = trace(links, lambda: model(batch(5, 3)))
    # relu ran in m itself; m/2 retains the relu's output, counted once.
    assert tracer.activations == {'m': 5 * 4 * 4, None: LOSS}
    assert tracer.parents == {'m': None, 'm/0': 'm', 'm/2': 'm'}


class Reshaping(chainer.Chain):
    """A link whose node keeps nothing: a reshape."""

    def forward(self, h):
        return F.reshape(h, (2, 10))


def test_a_node_not_retaining_an_input_does_not_keep_it():
    l0, reshaping, l2 = L.Linear(3, 4), Reshaping(), L.Linear(4, 2)

    def forward():
        h = l0(batch(5, 3))
        return F.sum(reshaping(h)) + F.sum(l2(h))
    tracer = trace({'l0': l0, 'reshaping': reshaping, 'l2': l2}, forward)
    # l2 retains l0's output, 5 * 4 float32; the reshape keeps nothing.
    assert tracer.activations == {'l2': 5 * 4 * 4, None: LOSS}


class Scaled(chainer.Link):
    """Multiplies by a constant it holds, then by a mask it makes."""

    def __init__(self):
        super().__init__()
        self.scale = batch(5, 4)

    def forward(self, h):
        return h * self.scale * self.xp.ones_like(h.array)


def test_arrays_a_link_makes_count_its_constants_do_not():
    linear, scaled = L.Linear(3, 4), Scaled()
    tracer = trace({'linear': linear, 'scaled': scaled},
                   lambda: scaled(linear(batch(5, 3))))
    # 5 * 4 float32 each: the first F.mul retains linear's output and the
    # constant (made before the forward), the second its input and the
    # mask scaled made.
    assert tracer.activations == {'scaled': 3 * 80, None: LOSS}


def test_the_graph_is_read_at_the_last_backward():
    l1, l2 = L.Linear(3, 4), L.Linear(4, 2)

    def forward():
        h = l1(batch(5, 3))
        chainer.grad([F.sum(h)], [h])  # a backward inside the forward
        return l2(h)
    tracer = trace({'l1': l1, 'l2': l2}, forward)
    # l2, called after chainer.grad, retains l1's output: 5 * 4 float32.
    assert tracer.activations == {'l2': 80, None: LOSS}


# -- kept_buffers on recorded nodes -------------------------------------------

def record(forward):
    nodes = Nodes()
    with nodes:
        forward(nodes)
    return nodes.nodes


def test_an_input_two_nodes_retain_is_counted_once():
    l0, la, lb = L.Linear(3, 4), L.Linear(4, 2), L.Linear(4, 2)

    def forward(nodes):
        h = l0(batch(5, 3))
        nodes.tag = 'a'
        la(h)
        nodes.tag = 'b'
        lb(h)
        forward.key = buffers.buffer_of(h.array).key
    nodes = record(forward)
    kept = graph.kept_buffers(nodes, graph.model_buffers([l0, la, lb]))
    # l0's output, 5 * 4 float32, is retained by both.
    assert kept == {forward.key: KeptBuffer(5 * 4 * 4, ['a', 'b'])}
    assert graph.bytes_per_tag(kept) == {'a': 5 * 4 * 4}


def test_a_view_of_a_kept_array_is_counted_once():
    l0, l1 = L.Linear(3, 4), L.Linear(2, 3)

    def forward(nodes):
        h = l0(batch(5, 3))
        nodes.tag = 'r'
        y = F.relu(h)
        nodes.tag = 'l'
        l1(F.reshape(y, (10, 2)))
        forward.key = buffers.buffer_of(y.array).key
    nodes = record(forward)
    kept = graph.kept_buffers(nodes, graph.model_buffers([l0, l1]))
    # relu retains its output (5 * 4 float32), l1 a reshape of it.
    assert kept == {forward.key: KeptBuffer(5 * 4 * 4, ['r', 'l'])}


def test_a_leaf_input_counts_when_a_link_made_the_node():
    mask = batch(5, 4)
    labels = batch(5, 4)

    def forward(nodes):
        h = F.relu(batch(5, 4))
        nodes.tag = 'l'
        h = h * mask  # a mask the link made: kept, counted
        nodes.tag = None
        F.mean_squared_error(h, labels)  # labels outside every link
    nodes = record(forward)
    kept = graph.kept_buffers(nodes)
    # 5 * 4 float32 each: the relu's output (outside every link), the mask
    # (the link's F.mul retains it); mean_squared_error (outside) retains
    # h and the labels, a leaf of a node made outside every link.
    assert graph.bytes_per_tag(kept) == {None: 80 + 80, 'l': 80}
    assert buffers.buffer_of(mask).key in kept
    assert buffers.buffer_of(labels).key not in kept
    # Excluded (made before the forward), it is not counted.
    kept = graph.kept_buffers(nodes, {buffers.buffer_of(mask).key})
    assert graph.bytes_per_tag(kept) == {None: 80 + 80}


class Encoding(chainer.Link):
    """A link holding constants as attributes."""

    def __init__(self):
        super().__init__()
        self.table = batch(4, 2)
        self.tables = [batch(3), 'not an array']
        self.named = {'one': batch(2)}
        self.add_persistent('count', batch(1))


def test_attribute_arrays():
    link = Encoding()
    assert {id(a) for a in graph.attribute_arrays([link])} == {
        id(link.table), id(link.tables[0]), id(link.named['one']),
        id(link.count)}


def test_parameters_and_persistent_values_are_never_counted():
    conv, bn = L.Convolution2D(2, 3, 3, pad=1), L.BatchNormalization(3)

    def forward(nodes):
        bn(conv(batch(2, 2, 5, 5)))
    nodes = record(forward)
    bn_node = nodes[-1][0]
    assert bn_node.running_mean is bn.avg_mean
    # conv's output; mean, var, inv_std; and avg_mean and avg_var (3
    # float32 each) unless excluded.
    counted = 2 * 3 * 5 * 5 * 4 + 3 * (3 * 4)
    assert sum(b.nbytes for b in graph.kept_buffers(nodes).values()) == (
        counted + 2 * (3 * 4))
    kept = graph.kept_buffers(nodes, graph.model_buffers([conv, bn]))
    assert sum(b.nbytes for b in kept.values()) == counted


def test_model_buffers_are_parameters_gradients_and_persistents():
    bn = L.BatchNormalization(3)
    bn.gamma.grad = None
    expected = {id(a) for a in (
        bn.gamma.array, bn.beta.array, bn.beta.grad, bn.avg_mean,
        bn.avg_var)}
    assert graph.model_buffers([bn]) == expected


def test_uninitialized_parameters_have_no_buffer():
    link = L.Linear(None, 2)
    assert graph.model_buffers([link]) == {
        id(link.b.array), id(link.b.grad)}


# -- pure functions --------------------------------------------------------

PARENTS = {'m': None, 'm/a': 'm', 'm/a/x': 'm/a', 'm/b': 'm'}


@pytest.mark.parametrize('name, expected', [
    ('m/a/x', ['m/a/x', 'm/a', 'm']),
    ('m', ['m']),
    (None, []),
])
def test_callers(name, expected):
    assert graph.callers(name, PARENTS) == expected


def test_callers_of_a_link_calling_itself():
    assert graph.callers('r', {'r': 'r'}) == ['r']


@pytest.mark.parametrize('tags, expected', [
    (['m/a/x'], ['m/a/x', 'm/a', 'm']),
    (['m/a/x', 'm/a'], ['m/a', 'm']),
    (['m/a/x', 'm/b'], ['m']),
    (['m/a', None], []),
])
def test_common_callers(tags, expected):
    assert graph.common_callers(tags, PARENTS) == expected


def test_bytes_per_tag_charges_the_first_keeper():
    kept = {1: KeptBuffer(10, ['a', 'b']), 2: KeptBuffer(20, ['b']),
            3: KeptBuffer(40, [None, 'a'])}
    assert graph.bytes_per_tag(kept) == {'a': 10, 'b': 20, None: 40}


def test_forgettable_bytes():
    kept = {1: KeptBuffer(10, ['m/a/x']),
            2: KeptBuffer(20, ['m/a/x', 'm/b']),
            3: KeptBuffer(40, ['m/a']), 4: KeptBuffer(80, [None, 'm/b'])}
    # Buffer 3 is m/a/x's input; buffer 4 is kept outside every link too.
    inputs = {'m/a/x': {3}, 'm/a': {3}}
    assert graph.forgettable_bytes(kept, PARENTS, inputs) == {
        'm/a/x': 10, 'm/a': 10, 'm': 10 + 20 + 40}

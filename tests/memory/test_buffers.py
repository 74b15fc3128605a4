import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext.memory import buffers
from chainer_hookext.memory.buffers import Buffer


def ids(arrays):
    return {id(a) for a in arrays}


def test_a_view_and_its_base_are_one_buffer():
    a = numpy.zeros(10, numpy.float32)
    assert buffers.buffer_of(a) == Buffer(id(a), 40)  # 10 * 4 bytes
    assert buffers.buffer_of(a[2:5]) == Buffer(id(a), 40)
    assert buffers.buffer_of(a[2:5][1:]) == Buffer(id(a), 40)


@pytest.mark.parametrize('view', [
    lambda a: a.reshape(2, 5),
    lambda a: a.reshape(2, 5).T,
    lambda a: a.reshape(5, 2)[::2].transpose(),
])
def test_reshape_and_transpose_views_are_their_base(view):
    a = numpy.zeros(10, numpy.float64)
    assert buffers.buffer_of(view(a)) == Buffer(id(a), 80)  # 10 * 8


def test_a_copy_is_another_buffer():
    a = numpy.zeros(10, numpy.float32)
    b = a[2:5].copy()
    assert buffers.buffer_of(b) == Buffer(id(b), 12)  # 3 * 4


def test_a_buffer_numpy_does_not_own_counts_the_view():
    a = numpy.frombuffer(bytearray(64), numpy.float32)
    # The bytearray is not an array: only the view's 4 * 4 bytes.
    assert buffers.buffer_of(a[4:8]) == Buffer(id(a), 16)
    assert buffers.buffer_of(a) == Buffer(id(a), 64)


def test_a_zero_dimensional_array_is_a_buffer():
    a = numpy.array(1.0, numpy.float32)
    assert buffers.buffer_of(a) == Buffer(id(a), 4)


@pytest.mark.parametrize('value', [1.5, None, numpy.float32(1), [1.0]])
def test_what_is_not_an_array_has_no_buffer(value):
    assert buffers.buffer_of(value) is None


def test_is_array():
    assert buffers.is_array(numpy.zeros(1))
    assert not buffers.is_array(1.0)
    assert not buffers.is_array(chainer.Variable(numpy.zeros(1)))


def test_kept_arrays_of_a_node_retaining_its_inputs():
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    link = L.Linear(3, 4)
    node = link(x).creator_node
    # LinearFunction retains x and W, not b; its output is gone.
    assert ids(buffers.kept_arrays(node)) == ids([x.array, link.W.array])


def test_kept_arrays_of_a_node_retaining_its_output():
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    y = F.relu(x)
    node = y.creator_node
    assert ids(buffers.kept_arrays(node)) == {id(y.array)}
    array = y.array
    del y  # the output variable is gone: the retained output stays
    assert ids(buffers.kept_arrays(node)) == {id(array)}


def test_kept_arrays_of_a_node_storing_an_attribute():
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    node = F.dropout(x).creator_node
    assert ids(buffers.kept_arrays(node)) == {id(node.mask)}


class Saving(chainer.FunctionNode):
    """Identity keeping two arrays in a tuple and one in a list."""

    def forward(self, inputs):
        x, = inputs
        self.saved = (x * 2, 'not an array', x * 3)
        self.more = [x * 4]
        return x + 1,


def test_kept_arrays_inside_a_tuple_or_a_list():
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    node = Saving()
    node.apply((x,))
    assert ids(buffers.kept_arrays(node)) == ids(node.saved[::2] + (
        node.more[0],))


class OldStyle(chainer.Function):
    """An old-style Function storing an array attribute."""

    def forward(self, inputs):
        self.mask = inputs[0] > 0
        return inputs[0] * 2,

    def backward(self, inputs, grad_outputs):
        return grad_outputs[0] * 2,


def test_kept_arrays_of_an_old_style_function():
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    function = OldStyle()
    y = function(x)
    adapter = y.creator_node
    assert type(adapter) is chainer.function.FunctionAdapter
    # An old-style Function retains its inputs; y is still referenced.
    assert ids(buffers.kept_arrays(adapter)) == ids(
        [x.array, function.mask, y.array])


def test_leaf_arrays_are_the_inputs_without_a_creator():
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    link = L.Linear(3, 4)
    node = link(x).creator_node
    # Retained (x, W) or referenced (x, W, b): each leaf, with repeats.
    assert ids(buffers.leaf_arrays(node)) == ids(
        [x.array, link.W.array, link.b.array])
    h = F.identity(x)
    node = link(h).creator_node
    assert ids(buffers.leaf_arrays(node)) == ids(
        [link.W.array, link.b.array])

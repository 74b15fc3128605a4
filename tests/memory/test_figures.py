import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest

from chainer_hookext.memory import figures
from chainer_hookext.memory import tracer as tracer_module
from chainer_hookext.memory.figures import Candidate
from chainer_hookext.memory.figures import LinkFigures
from chainer_hookext.report import keys


class Two(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(3, 4)
            self.l2 = L.Linear(4, 2)

    def forward(self, x):
        return self.l2(self.l1(x))


#: Two's parameters: l1's W and b, 3 * 4 + 4 float32; l2's, 4 * 2 + 2.
L1, L2 = (12 + 4) * 4, (8 + 2) * 4


def updated(optimizer):
    model = Two()
    optimizer.setup(model)
    x = numpy.ones((5, 3), numpy.float32)
    optimizer.update(lambda: F.sum(model(x)))
    return model


@pytest.mark.parametrize('optimizer, states', [
    (chainer.optimizers.Adam, 2),  # m and v
    (chainer.optimizers.MomentumSGD, 1),  # v
    (chainer.optimizers.SGD, 0),
])
def test_model_bytes(optimizer, states):
    model = updated(optimizer())
    assert figures.model_bytes(model) == (
        L1 + L2, L1 + L2, states * (L1 + L2))
    assert figures.model_bytes(model.l1) == (L1, L1, states * L1)


def test_model_bytes_without_gradients():
    model = updated(chainer.optimizers.Adam())
    model.cleargrads()
    assert figures.model_bytes(model) == (L1 + L2, 0, 2 * (L1 + L2))


def test_model_bytes_without_an_optimizer():
    model = Two()  # Chainer fills new parameters' gradients with NaN
    assert figures.model_bytes(model) == (L1 + L2, L1 + L2, 0)


def test_model_bytes_leave_uninitialized_parameters_out():
    link = L.Linear(None, 2)
    assert figures.model_bytes(link) == (2 * 4, 2 * 4, 0)


class Tree(chainer.Chain):
    """m: a (x), b."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = chainer.Sequential(L.Linear(3, 3))
            self.b = L.Linear(3, 2)


PARENTS = {'m': None, 'm/a': 'm', 'm/a/0': 'm/a', 'm/b': 'm'}


def measured(gpu=False):
    """A tracer with figures set by hand, and Tree's (name, link)."""
    model = Tree()
    links = [('m', model), ('m/a', model.a), ('m/a/0', model.a[0]),
             ('m/b', model.b)]
    tracer = tracer_module.MemoryTracer()
    tracer.activations = {'m': 1, 'm/a': 10, 'm/a/0': 100, 'm/b': 1000,
                          None: 7}
    tracer.parents = dict(PARENTS)
    tracer.forward_time = {'m': 0.5, 'm/a': 0.25, 'm/a/0': 0.125,
                           'm/b': 0.0625}
    tracer.forgettable = {'m/a': 110}
    tracer.gpu = gpu
    tracer.forward_peak = {'m': 300, 'm/a': 200, 'm/a/0': 100}
    tracer.backward_peak = {'m/a/0': 50, 'm/a': 20, 'm/b': 70, None: 9}
    return links, tracer


def test_link_figures_add_up_the_children():
    links, tracer = measured()
    rows = figures.link_figures(links, tracer)
    assert [(r.key, r.parent, r.activations, r.self_activations,
             r.forgettable) for r in rows] == [
        ('m', None, 1111, 1, 0),
        ('m/a', 'm', 110, 10, 110),
        ('m/a/0', 'm/a', 100, 100, 0),
        ('m/b', 'm', 1000, 1000, 0),
        (keys.OUTSIDE, None, 7, 7, None)]
    assert [r.forward_time for r in rows] == [
        0.5, 0.25, 0.125, 0.0625, None]
    # Linear(3, 3): 12 float32; Linear(3, 2): 8; new gradients are NaN.
    assert [(r.params, r.grads, r.optimizer_state) for r in rows] == [
        (80, 80, 0), (48, 48, 0), (48, 48, 0), (32, 32, 0), (0, 0, 0)]


def test_link_figures_on_a_cpu_have_no_gpu_fields():
    links, tracer = measured()
    for row in figures.link_figures(links, tracer):
        assert (row.peak, row.backward_peak) == (None, None)


def test_link_figures_on_a_gpu_take_the_largest_peak_below():
    links, tracer = measured(gpu=True)
    rows = figures.link_figures(links, tracer)
    assert [(r.key, r.peak, r.backward_peak) for r in rows] == [
        ('m', 300, 70), ('m/a', 200, 50), ('m/a/0', 100, 50),
        ('m/b', 0, 70), (keys.OUTSIDE, None, 9)]


def test_link_figures_without_backward():
    links, tracer = measured()
    tracer.activations = None
    rows = figures.link_figures(links, tracer)
    assert [r.activations for r in rows] == [0] * 5


def row(key, parent, forgettable, forward_time):
    return LinkFigures(
        key=key, parent=parent, activations=0, self_activations=0,
        forgettable=forgettable, params=0, grads=0, optimizer_state=0,
        peak=None, backward_peak=None, forward_time=forward_time)


ROWS = [
    row('m', None, 4000, 1.0),  # outermost: left out
    row('m/a', 'm', 1000, 0.5),  # 2 bytes per ms
    row('m/b', 'm', 3000, 0.5),  # 6
    row('m/c', 'm', 2000, 0.25),  # 8
    row('m/d', 'm', 0, 0.25),  # frees nothing
    row('m/e', 'm', 1000, None),  # not timed
    row(keys.OUTSIDE, None, None, None),
]


def test_forget_candidates_rank_bytes_per_ms():
    assert figures.forget_candidates(ROWS) == [
        Candidate('m/c', 2000, 0.25, 8.0), Candidate('m/b', 3000, 0.5, 6.0),
        Candidate('m/a', 1000, 0.5, 2.0)]


def test_forget_candidates_top():
    assert [c.key for c in figures.forget_candidates(ROWS, top=1)] == [
        'm/c']
    assert len(figures.forget_candidates(ROWS, top=10)) == 3


def test_forget_candidates_with_given_times():
    times = {'m': 1.0, 'm/a': 0.125, 'm/b': 0.5, 'm/e': 0.25}
    # m/c is not in times: left out; m/e is timed there.
    assert figures.forget_candidates(ROWS, times) == [
        Candidate('m/a', 1000, 0.125, 8.0), Candidate('m/b', 3000, 0.5, 6.0),
        Candidate('m/e', 1000, 0.25, 4.0)]

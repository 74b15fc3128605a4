"""LinkMemory against reality: NumPy's bytes kept alive by the forward.

The window: from the start of the predictor's forward (``L.Classifier``
has freed the previous iteration's graph) to the end of the Classifier's
(Chainer 7's ``optimizer.update`` clears the gradients after the loss
function returns, then runs backward).  NumPy registers its data buffers
with tracemalloc in its own domain.
"""

import tracemalloc

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training

import chainer_hookext

#: NumPy's tracemalloc domain (``NPY_TRACE_DOMAIN``).
NUMPY_DOMAIN = 389047


def traced_bytes(numpy_only=True):
    snapshot = tracemalloc.take_snapshot()
    if numpy_only:
        snapshot = snapshot.filter_traces(
            [tracemalloc.DomainFilter(True, NUMPY_DOMAIN)])
    return sum(trace.size for trace in snapshot.traces)


class Probe(chainer.LinkHook):
    """The bytes allocated in each iteration's window, NumPy's and (with
    ``every_domain``) all."""

    name = 'Probe'

    def __init__(self, classifier, every_domain=False):
        self.classifier = classifier
        self.every_domain = every_domain
        self.numpy = []
        self.all = []

    def forward_preprocess(self, args):
        if args.link is self.classifier.predictor:
            self.start = traced_bytes()
            if self.every_domain:
                self.start_all = traced_bytes(False)

    def forward_postprocess(self, args):
        if args.link is self.classifier:
            self.numpy.append(traced_bytes() - self.start)
            if self.every_domain:
                self.all.append(traced_bytes(False) - self.start_all)


class MLP(chainer.Chain):

    def __init__(self, n_units):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(784, n_units)
            self.l2 = L.Linear(n_units, n_units)
            self.l3 = L.Linear(n_units, 10)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class CNN(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.c1 = L.Convolution2D(1, 8, 3, pad=1)
            self.bn = L.BatchNormalization(8)
            self.c2 = L.Convolution2D(8, 16, 3, pad=1)
            self.fc = L.Linear(None, 10)

    def forward(self, x):
        h = F.max_pooling_2d(F.relu(self.bn(self.c1(x))), 2)
        h = F.dropout(F.relu(self.c2(h)))
        return self.fc(h)


def run(predictor, shape, batchsize, out, every_domain=False,
        model=None, optimizer=None, memory=None):
    """Trains 6 iterations; returns the probe and the activations LinkMemory
    reported at iterations 3 and 6 (measured in iterations 1 and 4).

    ``model``: a chain with a ``predictor``, called with ``(x, t)``
    (``L.Classifier(predictor)`` by default); ``optimizer``: Adam by
    default; ``memory``: the ``LinkMemory`` to extend the trainer with."""
    model = L.Classifier(predictor) if model is None else model
    rng = numpy.random.RandomState(0)
    x = rng.rand(batchsize * 6, *shape).astype(numpy.float32)
    t = rng.randint(0, 10, batchsize * 6).astype(numpy.int32)
    it = chainer.iterators.SerialIterator(
        chainer.datasets.TupleDataset(x, t), batchsize)
    optimizer = chainer.optimizers.Adam() if optimizer is None else (
        optimizer)
    optimizer.setup(model)
    trainer = training.Trainer(
        training.updaters.StandardUpdater(it, optimizer),
        (6, 'iteration'), out=str(out))
    if memory is None:
        memory = chainer_hookext.LinkMemory()
    trainer.extend(memory, trigger=(3, 'iteration'))
    reported = []

    @training.make_extension(trigger=(3, 'iteration'),
                             priority=training.PRIORITY_READER)
    def read(trainer):  # roots and (outside)
        reported.append(sum(
            r.activations for r in memory.last_ if r.parent is None))
    trainer.extend(read)
    probe = Probe(model, every_domain)
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        with probe:
            trainer.run()
    finally:
        if not tracing:
            tracemalloc.stop()
    return probe, reported


@pytest.mark.parametrize('n_units, batchsize', [(100, 32), (1000, 100)])
def test_mlp_activations_are_numpy_bytes(n_units, batchsize, tmp_path):
    probe, reported = run(MLP(n_units), (784,), batchsize, tmp_path)
    assert len(probe.numpy) == 6
    for measured, activations in zip(probe.numpy[::3], reported):
        assert activations == pytest.approx(measured, rel=0.02)


def test_cnn_activations_are_numpy_bytes(tmp_path):
    cnn = CNN()
    probe, reported = run(cnn, (1, 28, 28), 8, tmp_path)
    assert reported[1] == pytest.approx(probe.numpy[3], rel=0.02)
    # In iteration 1 fc's W was made too, with its gradient (Chainer fills
    # a new parameter's gradient with NaN): 10 * (16 * 14 * 14) float32
    # each.
    assert cnn.fc.W.array.nbytes == 10 * 16 * 14 * 14 * 4
    made = 2 * cnn.fc.W.array.nbytes
    assert reported[0] == pytest.approx(probe.numpy[0] - made, rel=0.02)


def test_python_objects_of_the_graph_are_not_counted(tmp_path):
    probe, reported = run(MLP(100), (784,), 32, tmp_path, every_domain=True)
    # The graph's Python objects (variables, nodes: ~1-2 KB per node) are
    # allocated in the window too, but are not activations.
    for numpy_bytes, all_bytes in zip(probe.numpy, probe.all):
        assert all_bytes - numpy_bytes > 1024

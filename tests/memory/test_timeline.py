"""The memory timeline against reality (docs/memory.md, "Memory over the
iteration"): at the end of the forward its activations are NumPy's bytes
allocated since the forward's start and not freed (tracemalloc, as in
``test_agreement.py``), to the byte; after the optimizer, with the graph
freed, it holds the parameters, gradients and optimizer state."""

import tracemalloc

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training

from chainer_hookext.memory import figures
from chainer_hookext.memory import timeline as memory_timeline
from chainer_hookext.report import link_names
from tests.extensions.test_link_memory_forgettable import Net
from tests.memory.test_agreement import CNN
from tests.memory.test_agreement import MLP
from tests.memory.test_agreement import traced_bytes


class Loss(chainer.Chain):
    """The softmax cross entropy of the predictor's output; unlike
    ``L.Classifier``, keeps no variable (the graph is freed after the
    update)."""

    def __init__(self, predictor):
        super().__init__()
        with self.init_scope():
            self.predictor = predictor

    def forward(self, x, t):
        return F.softmax_cross_entropy(self.predictor(x), t)


class ForwardBytes(chainer.LinkHook):
    """NumPy's bytes allocated during each call of ``link`` and alive at
    its end."""

    name = 'ForwardBytes'

    def __init__(self, link):
        self.link = link
        self.bytes = []

    def forward_preprocess(self, args):
        if args.link is self.link:
            self.start = traced_bytes()

    def forward_postprocess(self, args):
        if args.link is self.link:
            self.bytes.append(traced_bytes() - self.start)


def record(updater, model, iterations=3, traced=2):
    """Runs ``iterations`` under tracemalloc, iteration ``traced``
    recorded by a MemoryTimeline; returns it."""
    trainer = training.Trainer(updater, (iterations, 'iteration'))
    recorded = []

    @training.make_extension(trigger=(1, 'iteration'))
    def timeline(trainer):
        number = trainer.updater.iteration
        if recorded and recorded[0].recording:
            recorded[0].iteration_ended(number)
            recorded[0].stop()
        if number == traced - 1:
            recorded.append(memory_timeline.MemoryTimeline(
                link_names.model_link_names(trainer)))
            recorded[0].start()
    trainer.extend(timeline)
    tracemalloc.start()
    try:
        trainer.run()
    finally:
        tracemalloc.stop()
    return recorded[0]


def classifier_updater(model, shape, batchsize=16):
    rng = numpy.random.RandomState(0)
    x = rng.rand(batchsize * 3, *shape).astype(numpy.float32)
    t = rng.randint(0, 3, batchsize * 3).astype(numpy.int32)
    it = chainer.iterators.SerialIterator(
        chainer.datasets.TupleDataset(x, t), batchsize)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    return training.updaters.StandardUpdater(it, optimizer)


def model_bytes(*models):
    return sum(sum(figures.model_bytes(m)) for m in models)


def assert_model_only_at_the_end(timeline, *models):
    end = memory_timeline.points(timeline)[-1]
    assert end.sample.kind == 'end'
    assert end.categories['activations'] == 0
    assert end.total == model_bytes(*models)


@pytest.mark.parametrize('predictor, shape', [
    (lambda: MLP(100), (784,)), (CNN, (1, 28, 28)), (Net, (4,)),
    (lambda: Net(forget=True), (4,))],
    ids=['mlp', 'cnn', 'block', 'f_forget'])
def test_end_of_forward_and_after_the_optimizer(predictor, shape):
    model = Loss(predictor())
    probe = ForwardBytes(model)
    with probe:
        timeline = record(classifier_updater(model, shape), model)
    ends = [p for p in memory_timeline.points(timeline)
            if p.sample.kind == 'forward' and p.sample.where == 'main']
    assert len(ends) == 1
    assert ends[0].categories['activations'] == probe.bytes[1]  # the byte
    assert_model_only_at_the_end(timeline, model)


def test_classifier_keeps_its_last_graph():
    # L.Classifier keeps y, loss and accuracy: the graph outlives the
    # update, until the next forward.
    model = L.Classifier(MLP(100))
    timeline = record(classifier_updater(model, (784,)), model)
    points = memory_timeline.points(timeline)
    forward, = [p for p in points if p.sample.where == 'main']
    assert points[-1].categories['activations'] == (
        forward.categories['activations']) > 0


def test_gradients_grow_through_the_backward():
    # Chainer sets a parameter's gradient at the backward's end; the
    # timeline counts it from the step that made it (the old ones are
    # freed by cleargrads, between the forward and the backward).
    model = L.Classifier(MLP(100))
    timeline = record(classifier_updater(model, (784,)), model)
    grads = [p.categories['grads'] for p in memory_timeline.points(timeline)
             if p.sample.kind == 'backward']
    assert grads[0] == 0
    assert grads == sorted(grads)
    assert grads[-1] == sum(p.array.nbytes for p in model.params())
    assert len(set(grads)) == 4  # none, then l3's, l2's and l1's


class BPTT(training.updaters.StandardUpdater):
    """Three steps of an LSTM, one backward, the graph unchained."""

    def update_core(self):
        batch = self.get_iterator('main').next()
        x, t = self.converter(batch)
        optimizer = self.get_optimizer('main')
        model = optimizer.target
        model.rnn.reset_state()
        loss = 0
        for step in range(3):
            loss += F.softmax_cross_entropy(model.fc(model.rnn(x)), t)
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        model.rnn.reset_state()
        optimizer.update()


def test_bptt():
    model = chainer.Chain()
    with model.init_scope():
        model.rnn = L.LSTM(4, 8)
        model.fc = L.Linear(8, 3)
    updater = classifier_updater(model, (4,))
    updater = BPTT(updater.get_iterator('main'), updater.get_optimizer(
        'main'))
    timeline = record(updater, model)
    assert_model_only_at_the_end(timeline, model)
    activations = [p.categories['activations']
                   for p in memory_timeline.points(timeline)]
    assert max(activations) > 0


class GAN(training.updaters.StandardUpdater):
    """Chainer's DCGAN shape: the discriminator's update, then the
    generator's, each its own graph."""

    def update_core(self):
        batch = self.get_iterator('main').next()
        x, _ = self.converter(batch)
        gen, dis = (self.get_optimizer(k) for k in ('gen', 'dis'))
        z = numpy.random.rand(len(x), 2).astype(numpy.float32)
        fake = gen.target(z)
        dis_loss = F.sum(F.softplus(-dis.target(x))) + F.sum(
            F.softplus(dis.target(fake)))
        dis.target.cleargrads()
        dis_loss.backward()
        dis.update()
        gen_loss = F.sum(F.softplus(-dis.target(fake)))
        gen.target.cleargrads()
        gen_loss.backward()
        gen.update()


def test_gan():
    gen, dis = L.Linear(2, 4), L.Linear(4, 1)
    base = classifier_updater(L.Linear(4, 3), (4,))
    optimizers = {}
    for name, link in (('gen', gen), ('dis', dis)):
        optimizers[name] = chainer.optimizers.Adam()
        optimizers[name].setup(link)
    updater = GAN(base.get_iterator('main'), optimizers)
    timeline = record(updater, gen)
    assert_model_only_at_the_end(timeline, gen, dis)
    points = memory_timeline.points(timeline)
    assert max(p.categories['activations'] for p in points) > 0


class TanhMLP(chainer.Chain):
    """``b(tanh(a(x)))``: ``tanh`` keeps its output, ``a``'s is freed."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(4, 16)
            self.b = L.Linear(16, 3)

    def forward(self, x):
        return self.b(F.tanh(self.a(x)))


def test_forget_lowers_the_peak_by_a_known_amount():
    # Adam, batches of 16 float32: the peak is the end of main's forward
    # (the gradients of the iteration before still alive).  At that
    # moment predictor keeps tanh's output (16 x 16 x 4 = 1024 bytes,
    # charged to predictor itself) and b's output (16 x 3 x 4 = 192),
    # which the loss outside predictor keeps too: F.forget around
    # predictor frees the first only.  a's output is freed before the
    # peak (tanh keeps its own output, not its input) and b's output is
    # kept by the loss: F.forget around a or b lowers nothing.
    model = Loss(TanhMLP())
    timeline = record(classifier_updater(model, (4,)), model)
    peak = memory_timeline.peak_of(timeline)
    assert (peak.point.sample.kind, peak.point.sample.where) == (
        'forward', 'main')
    saving = {s.link: s for s in peak.forget}
    assert saving['main/predictor'].nbytes == 1024
    assert saving['main/predictor'].peak == peak.point.total - 1024
    assert 'main/predictor/a' not in saving
    assert 'main/predictor/b' not in saving
    assert [h.nbytes for h in peak.holders] == sorted(
        (h.nbytes for h in peak.holders), reverse=True)


def test_arrays_followed_already_are_not_looked_up_again(monkeypatch):
    """Cost (benchmarks/README.md, "Memory timeline"): at an iteration's
    end the model's arrays it follows are known by their id; only what is
    new is looked up, and the bytes are the same."""
    model = Loss(MLP(10))
    updater = classifier_updater(model, (784,))
    updater.update()  # the gradients and Adam's state made
    timeline = memory_timeline.MemoryTimeline(link_names.model_link_names(
        training.Trainer(updater, (1, 'iteration'))))
    timeline.start()
    looked_up = []
    owner_of = memory_timeline.buffers.owner_of
    monkeypatch.setattr(memory_timeline.buffers, 'owner_of',
                        lambda array: looked_up.append(array) or owner_of(
                            array))
    try:
        timeline.iteration_ended(1)
        timeline.iteration_ended(2)
    finally:
        timeline.stop()
    assert looked_up == []
    assert_model_only_at_the_end(timeline, model)


def test_a_parameter_initialised_in_the_window_is_its_links():
    # L.Linear(None, 3) makes its W at its first call, after the timeline
    # started: its bytes are charged to it, not to the outermost link.
    model = Loss(L.Linear(None, 3))
    updater = classifier_updater(model, (4,))
    timeline = memory_timeline.MemoryTimeline(link_names.model_link_names(
        training.Trainer(updater, (1, 'iteration'))))
    timeline.start()
    try:
        updater.update()
        timeline.iteration_ended(1)
    finally:
        timeline.stop()
    holders = {(c.category, c.holder) for c in timeline.changes
               if c.category != 'activations'}
    assert holders == {(category, 'main/predictor') for category in (
        'params', 'grads', 'optimizer_state')}


@pytest.mark.parametrize('kind, where, name', [
    ('end', 3, 'iteration 3'), ('forward', 'main/l1', 'main/l1'),
    ('backward', 'ReLU', 'ReLU')])
def test_where_a_sample_was_taken(kind, where, name):
    sample = memory_timeline.Sample(kind, where, 0, None, None, None)
    assert memory_timeline.where_of(sample) == name


def test_no_sample_without_a_change():
    # A sample equal to the one before adds nothing to a track, and the
    # peak names the first of equal totals; an iteration's end is kept.
    model = L.Classifier(MLP(100))
    timeline = record(classifier_updater(model, (784,)), model)
    samples = timeline.samples
    assert samples[-1].kind == 'end'
    assert all(after.changes != before.changes
               for before, after in zip(samples, samples[1:])
               if after.kind != 'end')

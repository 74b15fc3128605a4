"""Figures that were wrong before the timing core was redesigned."""

import gc
import threading
import weakref

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
from chainer import training

from chainer_hookext import TimedLinks
from chainer_hookext import TimerHook
from tests.conftest import MLP
from tests.conftest import TICK
from tests.conftest import make_dataset


def data(n=2):
    return numpy.zeros((n, 4), numpy.float32), numpy.zeros(n, numpy.int32)


class Peeking(chainer.Chain):
    """Calls ``peek()`` in the middle of its forward."""

    def __init__(self, peek):
        super().__init__()
        self.peek = peek
        with self.init_scope():
            self.l1 = L.Linear(4, 3)
            self.l2 = L.Linear(3, 3)

    def forward(self, x):
        h = self.l1(x)
        self.peek()
        return self.l2(h)


def run_peeking(peek, hook):
    model = Peeking(peek)
    with hook:
        for _ in range(3):
            model(data()[0])
    return hook.summary(by='path')


def test_reading_from_another_thread_leaves_the_figures_intact(clock):
    hook = TimerHook()
    seen = []

    def read_in_a_thread():
        thread = threading.Thread(target=lambda: seen.append(
            hook.summary(by='path')))
        thread.start()
        thread.join()

    with_reader = run_peeking(read_in_a_thread, hook)
    clock()
    alone = run_peeking(lambda: None, TimerHook())
    assert with_reader == alone
    assert with_reader['/']['occurrence'] == 3
    # The reader saw the calls ended so far: l1's, not the running root's.
    assert seen[0]['/']['occurrence'] == 0
    assert seen[0]['/l1']['occurrence'] == 1


def test_distinct_links_keep_distinct_paths():
    hook = TimerHook()
    first, second = L.Linear(4, 3), L.Linear(4, 3)
    x = data()[0]
    first.add_hook(hook)
    second.add_hook(hook)
    first(x)
    second(x)
    second(x)
    summary = hook.summary(by='path')
    assert {k: e['occurrence'] for k, e in summary.items()} == {
        '/': 1, '/#2': 2}


class Forgetting(chainer.Chain):
    """Applies ``l1`` under ``F.forget``: recomputed in backward."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 4)

    def forward(self, x):
        return F.sum(F.forget(lambda h: F.relu(self.l1(h)), x))


def test_forget_recomputation_is_backward_time(clock):
    model = Forgetting()
    hook = TimerHook(backward=True)
    with hook:
        for _ in range(2):
            model(data()[0]).backward()
    summary = hook.summary(by='path')
    # Forward ran twice; the two recomputations are not forward calls.
    assert summary['/l1']['occurrence'] == 2
    assert summary['/']['occurrence'] == 2
    assert sum(e['self_time'] for e in summary.values()) == hook.total_time()
    # The recomputation and its backward are backward time of the link
    # that called forget: nothing goes to '(outside)'.
    assert '(outside)' not in summary
    assert summary['/']['backward_self_time'] > 0
    assert sum(e['backward_self_time'] for e in summary.values()) == (
        hook.total_backward_time())


class MakesLinks(chainer.Chain):
    """Creates a new link in each forward (a throw-away link)."""

    def __init__(self, made):
        super().__init__()
        self.made = made
        with self.init_scope():
            self.l1 = L.Linear(4, 4)

    def forward(self, x):
        extra = L.Linear(4, 4)
        self.made.append(weakref.ref(extra))
        return extra(self.l1(x))


def check_throwaway_links_are_not_kept(hook):
    made = []
    model = MakesLinks(made)
    with hook:
        for _ in range(20):
            model(data()[0])
        gc.collect()
        assert [ref() for ref in made] == [None] * 20
    return hook.summary(by='path')


def test_throwaway_links_are_not_kept():
    summary = check_throwaway_links_are_not_kept(TimerHook(backward=True))
    assert summary['/<Linear>']['occurrence'] == 20
    assert summary['/l1']['occurrence'] == 20


def test_throwaway_links_out_of_scope_are_not_kept():
    hook = TimerHook()
    made = []
    model = MakesLinks(made)
    hook.set_scope({id(model): 'main', id(model.l1): 'main/l1'})
    with hook:
        for _ in range(20):
            model(data()[0])
        gc.collect()
        assert [ref() for ref in made] == [None] * 20
    assert list(hook.summary(by='name')) == ['main', 'main/l1']


class SharedLink(chainer.Chain):
    """One link reachable under two names, ``a`` and ``b``."""

    def __init__(self):
        super().__init__()
        shared = L.Linear(4, 4)
        with self.init_scope():
            self.a = shared
            self.b = shared

    def forward(self, x):
        return self.a(x)


def test_shared_link_named_as_chainer_names_it(trainer_factory):
    model = L.Classifier(SharedLink(), lossfun=lambda y, t: F.sum(y))
    trainer = trainer_factory(model=model, stop=(2, 'iteration'))
    timed = TimedLinks()
    trainer.extend(timed, trigger=(2, 'iteration'))
    trainer.run()
    reporter_name = trainer.reporter._observer_names[id(model.predictor.a)]
    assert reporter_name == 'main/predictor/b'  # Chainer: the last name
    assert 'main/predictor/b' in timed.summary(by='name')
    assert '/predictor/b' in timed.summary(by='path')


def test_two_models_keep_distinct_paths(tmp_path):
    gen, dis = L.Classifier(MLP()), L.Classifier(MLP())
    optimizers = {}
    for name, model in (('main', gen), ('dis', dis)):
        optimizers[name] = chainer.optimizers.SGD()
        optimizers[name].setup(model)

    class TwoModels(training.updaters.StandardUpdater):
        # dis is called in the update: only the update's calls count.
        def update_core(self):
            super().update_core()
            dis(*data())

    it = chainer.iterators.SerialIterator(make_dataset(), 8)
    trainer = training.Trainer(TwoModels(it, optimizers), (2, 'iteration'),
                               out=str(tmp_path))
    timed = TimedLinks(links=[gen, dis], backward=False)
    trainer.extend(timed)
    trainer.run()
    summary = timed.summary(by='path')
    assert '/main/predictor/l1' in summary and '/dis/predictor/l1' in summary
    assert summary['/main']['occurrence'] == 2
    assert summary['/dis']['occurrence'] == 2
    assert TICK  # the shared fake clock is importable from conftest

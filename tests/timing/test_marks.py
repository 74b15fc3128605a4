"""The loop's phase marks in updaters of every shape (issue 32, item 3).

Each test runs a real Trainer on the still clock (``tests/conftest.py``):
the iterator, the model's functions and the optimizer's hook take known
times, so each phase's total is exact, and the spans of one iteration show
the order in which the marks switched the phases (a switch that should not
happen shows even where it charges no time).
"""

import chainer
import chainer.functions as F
import chainer.links as L
import pytest
from chainer import training

from chainer_hookext import TimedLoop
from chainer_hookext.run import loop_phases
from chainer_hookext.timing import marks
from chainer_hookext.timing import phases
from tests.conftest import BACKWARD
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import OPTIMIZER
from tests.conftest import SLOW
from tests.conftest import SlowModel
from tests.conftest import SlowNode
from tests.conftest import make_slow_trainer
from tests.conftest import run_timed


def sleep(clock, x, forward=0.0, backward=0.0):
    return SlowNode(clock, forward, backward).apply((x,))[0]


def with_optimizer_hook(still, optimizer):
    optimizer.add_hook(lambda opt: still.sleep(OPTIMIZER), name='slow')
    return optimizer


def run(trainer):
    """Runs ``trainer`` with a TimedLoop; returns its reports (without
    ``time/loop/``) and the update's phases of each iteration from the
    second on, in the order they ran (zero-length ones included)."""
    spans = []

    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_WRITER + 2)
    def collect(trainer):
        clock = loop_phases._shared[trainer].clock
        if not any(s is spans for s in clock.span_lists):
            clock.span_lists.append(spans)
        spans.append(None)  # the update ended before this call
    trainer.extend(collect)
    _, log = run_timed(trainer)
    iterations, current = [], []
    for span in spans[1:]:
        if span is None:
            iterations.append(current)
            current = []
        elif span.phase in phases.UPDATE_PHASES:
            current.append(span.phase)
    return log, iterations


def check(log, iterations, expected, sequence, extension=0.0):
    """Each report's update phases are ``expected`` (seconds per
    iteration), every iteration ran ``sequence``; the slow extension and
    ``extension`` more seconds of other extensions make the iteration."""
    assert len(log) == 2
    for figures in log:
        for phase, seconds in expected.items():
            assert (phase, figures[phase]) == (phase, seconds)
        assert figures['other'] == 0.0
        assert figures['extension/slow'] == SLOW / 2
        assert figures['iteration'] == (
            sum(expected.values()) + SLOW / 2 + extension)
    assert iterations and all(seen == sequence for seen in iterations)


def phase_totals(data=0.0, forward=0.0, backward=0.0, optimizer=0.0):
    return {'data': data, 'forward': forward, 'backward': backward,
            'optimizer': optimizer}


# -- item 1: gradient accumulation --------------------------------------------

class Accumulating(training.updaters.StandardUpdater):
    # Four micro-batches, each its forward and backward, then one update.
    def update_core(self):
        optimizer = self.get_optimizer('main')
        model = optimizer.target
        model.cleargrads()
        for _ in range(4):
            x, t = self.converter(self.get_iterator('main').next(), None)
            model(x, t).backward()
        optimizer.update()


def test_gradient_accumulation_each_forward_is_forward(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, updater=Accumulating)
    optimizer = trainer.updater.get_optimizer('main')
    # Hooks working on arrays after the backward start no forward.
    optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(1e-4))
    optimizer.add_hook(chainer.optimizer_hooks.GradientClipping(1.0))
    log, iterations = run(trainer)
    # The next micro-batch, fetched after a backward with no update since,
    # is data.
    check(log, iterations, phase_totals(
        4 * DATA, 4 * FORWARD, 4 * BACKWARD, OPTIMIZER),
        ['data', 'forward', 'backward'] * 4 + ['optimizer'])


# -- item 2: two updates of one optimizer in an iteration --------------------

@pytest.mark.parametrize('lossfun', [False, True])
def test_two_updates_of_one_optimizer(still, tmp_path, lossfun):
    class TwoUpdates(training.updaters.StandardUpdater):
        def update_core(self):
            optimizer = self.get_optimizer('main')
            model = optimizer.target
            x, t = self.converter(self.get_iterator('main').next(), None)
            for _ in range(2):
                if lossfun:
                    optimizer.update(model, x, t)
                else:
                    loss = model(x, t)
                    model.cleargrads()
                    loss.backward()
                    optimizer.update()

    log, iterations = run(make_slow_trainer(
        still, tmp_path, updater=TwoUpdates))
    check(log, iterations, phase_totals(
        DATA, 2 * FORWARD, 2 * BACKWARD, 2 * OPTIMIZER),
        ['data'] + ['forward', 'backward', 'optimizer'] * 2)


def test_a_forward_after_the_update_without_backward_warns(still, tmp_path):
    class ReportsAfter(training.updaters.StandardUpdater):
        def update_core(self):
            optimizer = self.get_optimizer('main')
            x, t = self.converter(self.get_iterator('main').next(), None)
            optimizer.update(optimizer.target, x, t)
            optimizer.target(x, t)  # the loss after the update, reported

    with pytest.warns(RuntimeWarning, match='no backward') as record:
        log, iterations = run(make_slow_trainer(
            still, tmp_path, updater=ReportsAfter))
    assert len(record) == 1  # once a run
    # It cannot be told from the updater's own functions: optimizer.
    check(log, iterations, phase_totals(
        DATA, FORWARD, BACKWARD, OPTIMIZER + FORWARD),
        ['data', 'forward', 'backward', 'optimizer'])


# -- item 3: backward steps outside the update -------------------------------

def test_backward_in_an_extension_stays_in_its_phase(still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path)
    model = trainer.updater.get_optimizer('main').target

    # Before TimedLoop, so that each report has its calls.
    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_WRITER + 1)
    def probe(trainer):
        x, t = chainer.dataset.concat_examples(
            trainer.updater.get_iterator('main').dataset[:2])
        x = chainer.Variable(x)
        loss = model(x, t)
        chainer.grad([loss], [x])
        model.cleargrads()
        loss.backward()
    trainer.extend(probe)
    log, iterations = run(trainer)
    check(log, iterations, phase_totals(
        DATA, FORWARD, BACKWARD, OPTIMIZER),
        ['data', 'forward', 'backward', 'optimizer'],
        extension=FORWARD + 2 * BACKWARD)
    assert all(f['extension/probe'] == FORWARD + 2 * BACKWARD for f in log)


@pytest.mark.parametrize('inner_timed', [False, True])
def test_a_nested_trainer_stays_in_its_extension(still, tmp_path,
                                                 inner_timed):
    trainer = make_slow_trainer(still, tmp_path / 'outer')
    runs = []

    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_WRITER + 1)
    def nested(trainer):
        inner = make_slow_trainer(
            still, tmp_path / 'inner{}'.format(len(runs)), stop=1)
        timed = TimedLoop()
        if inner_timed:
            inner.extend(timed)
        inner.run()
        runs.append(timed.summary())
    trainer.extend(nested)
    log, iterations = run(trainer)
    whole = DATA + FORWARD + BACKWARD + OPTIMIZER
    check(log, iterations, phase_totals(
        DATA, FORWARD, BACKWARD, OPTIMIZER),
        ['data', 'forward', 'backward', 'optimizer'], extension=whole)
    assert all(f['extension/nested'] == whole for f in log)
    if inner_timed:
        for summary in runs:
            assert [summary[p] for p in ('data', 'forward', 'backward',
                                         'optimizer', 'other')] == [
                DATA, FORWARD, BACKWARD, OPTIMIZER, 0.0]


# -- item 4: backward inside the forward, F.forget, BPTT, GANs ---------------

@pytest.mark.parametrize('double_backprop', [False, True])
def test_grad_inside_the_forward(still, tmp_path, double_backprop):
    # An adversarial example (chainer.grad, then a second loss) or a
    # gradient penalty (double backprop through chainer.grad's result, the
    # gradient summed between its steps).
    class GradInForward(training.updaters.StandardUpdater):
        def update_core(self):
            optimizer = self.get_optimizer('main')
            model = optimizer.target
            x, t = self.converter(self.get_iterator('main').next(), None)
            x = chainer.Variable(x)
            h = sleep(still, x, forward=FORWARD)
            y = sleep(still, model.predictor(h), backward=BACKWARD)
            g, = chainer.grad([F.sum(y) + F.sum(y * y)], [x],
                              enable_double_backprop=double_backprop)
            if double_backprop:  # the penalty: its graph holds y's node
                second = F.sum(g * g)
            else:  # the loss on the adversarial example
                second = F.sum(model.predictor(x + 0.1 * g.array))
            second = sleep(still, second, forward=FORWARD)
            loss = F.softmax_cross_entropy(y, t) + second
            model.cleargrads()
            loss.backward()
            optimizer.update()

    trainer = make_slow_trainer(still, tmp_path, updater=GradInForward)
    # Parameters left as they are: the penalty would overflow them.
    trainer.updater.get_optimizer('main').lr = 0.0
    log, iterations = run(trainer)
    # chainer.grad's steps are backward; the second loss is forward again.
    # loss.backward() backpropagates through y's node once more.
    check(log, iterations, phase_totals(
        DATA, 2 * FORWARD, 2 * BACKWARD, OPTIMIZER),
        ['data', 'forward', 'backward', 'data', 'forward', 'backward',
         'optimizer'])


def test_forget_recomputes_in_backward(still, tmp_path):
    class Forgetting(SlowModel):
        def forward(self, x, t):
            def body(x):
                return sleep(still, self.predictor(x), forward=FORWARD,
                             backward=BACKWARD)
            return F.softmax_cross_entropy(F.forget(body, x), t)

    def updater(iterator, optimizer):
        model = Forgetting(still)
        return training.updaters.StandardUpdater(iterator, {
            'main': with_optimizer_hook(
                still, chainer.optimizers.SGD().setup(model))})

    log, iterations = run(make_slow_trainer(still, tmp_path, updater=updater))
    # F.forget's forward runs again inside its backward step: backward.
    check(log, iterations, phase_totals(
        DATA, FORWARD, FORWARD + BACKWARD, OPTIMIZER),
        ['data', 'forward', 'backward', 'optimizer'])


class Recurrent(chainer.Chain):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        with self.init_scope():
            self.fc = L.Linear(4, 4)
            self.out = L.Linear(4, 3)

    def forward(self, x, t, state):
        x = sleep(self.clock, x, forward=FORWARD)
        state = F.tanh(self.fc(x) if state is None else self.fc(x) + state)
        y = sleep(self.clock, self.out(state), backward=BACKWARD)
        return F.softmax_cross_entropy(y, t), state


def test_truncated_bptt(still, tmp_path):
    class BPTT(training.updaters.StandardUpdater):
        def update_core(self):
            optimizer = self.get_optimizer('main')
            model = optimizer.target
            model.cleargrads()
            state = None
            for _ in range(3):
                x, t = self.converter(self.get_iterator('main').next(), None)
                loss, state = model(x, t, state)
                loss.backward()
                loss.unchain_backward()
            optimizer.update()

    def updater(iterator, optimizer):
        return BPTT(iterator, with_optimizer_hook(
            still, chainer.optimizers.SGD().setup(Recurrent(still))))

    log, iterations = run(make_slow_trainer(still, tmp_path, updater=updater))
    check(log, iterations, phase_totals(
        3 * DATA, 3 * FORWARD, 3 * BACKWARD, OPTIMIZER),
        ['data', 'forward', 'backward'] * 3 + ['optimizer'])


class Net(chainer.Chain):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        with self.init_scope():
            self.fc = L.Linear(4, 4)

    def forward(self, x):
        x = sleep(self.clock, x, forward=FORWARD)
        return sleep(self.clock, self.fc(x), backward=BACKWARD)


def test_gan_both_forwards_first(still, tmp_path):
    # Chainer's DCGAN example: the generator's and the discriminator's
    # forward, then each optimizer's update with its loss.
    class GAN(training.updaters.StandardUpdater):
        def update_core(self):
            gen_opt = self.get_optimizer('gen')
            dis_opt = self.get_optimizer('dis')
            gen, dis = gen_opt.target, dis_opt.target
            x, _ = self.converter(self.get_iterator('main').next(), None)
            y_real = dis(x)
            y_fake = dis(gen(x * 0))
            dis_opt.update(lambda: F.sum(y_fake) - F.sum(y_real))
            gen_opt.update(lambda: -F.sum(y_fake))

    def updater(iterator, optimizer):
        return GAN(iterator, {
            name: with_optimizer_hook(
                still, chainer.optimizers.SGD().setup(Net(still)))
            for name in ('gen', 'dis')})

    log, iterations = run(make_slow_trainer(still, tmp_path, updater=updater))
    check(log, iterations, phase_totals(
        DATA, 3 * FORWARD, 5 * BACKWARD, 2 * OPTIMIZER),
        ['data'] + ['forward', 'backward', 'optimizer'] * 2)


def test_gan_each_pass_in_turn(still, tmp_path):
    hooks = set()

    class TwoModels(training.updaters.StandardUpdater):
        def update_core(self):
            x, t = self.converter(self.get_iterator('main').next(), None)
            for name in ('gen', 'dis'):
                optimizer = self.get_optimizer(name)
                hooks.update(optimizer._hookable._pre_update_hooks)
                optimizer.update(optimizer.target, x, t)

    def updater(iterator, optimizer):
        second = chainer.optimizers.SGD().setup(SlowModel(still))
        return TwoModels(iterator, {
            'gen': optimizer, 'dis': with_optimizer_hook(still, second)})

    log, iterations = run(make_slow_trainer(still, tmp_path, updater=updater))
    check(log, iterations, phase_totals(
        DATA, 2 * FORWARD, 2 * BACKWARD, 2 * OPTIMIZER),
        ['data'] + ['forward', 'backward', 'optimizer'] * 2)
    # No optimizer hook of ours: Chainer walks every parameter after each.
    assert hooks == {'slow'}


def test_parallel_updater_addgrads_is_optimizer(still, tmp_path):
    def parallel(iterator, optimizer):
        return training.updaters.ParallelUpdater(
            iterator, optimizer, devices={'main': -1, 'second': -1})

    log, iterations = run(make_slow_trainer(
        still, tmp_path, updater=parallel))
    check(log, iterations, phase_totals(
        DATA, 2 * FORWARD, 2 * BACKWARD, OPTIMIZER),
        ['data', 'forward', 'backward', 'optimizer'])


# -- the function hook alone ------------------------------------------------

class Node(object):
    """What PhaseMarks reads of a function node: its rank."""

    def __init__(self, rank):
        self.rank = rank


def drive(still, events, updates=lambda: 0):
    """Feeds PhaseMarks ``events`` from an update's start, one second each:
    ``('f', rank)`` a function applied, ``('b', rank)`` a backward step.
    Returns the phases' totals and their order."""
    clock = phases.PhaseClock()
    spans = []
    clock.span_lists.append(spans)
    hook = marks.PhaseMarks(clock, updates)
    hook.start()
    clock.switch(phases.DATA)
    for kind, rank in events:
        still.sleep(1.0)
        if kind == 'f':
            hook.forward_preprocess(Node(rank), ())
            still.sleep(1.0)
        else:
            hook.backward_preprocess(Node(rank), (), ())
            still.sleep(1.0)
            hook.backward_postprocess(Node(rank), (), ())
    still.sleep(1.0)
    hook.stop()
    hook.switch(phases.OTHER)
    clock.stop()
    return clock.totals, [span.phase for span in spans]


def test_functions_between_the_steps_of_one_walk_are_no_forward(still):
    # Chainer sums the gradients a node received before its step: that sum
    # comes between two steps, the second ranked no higher.
    totals, order = drive(still, [
        ('f', 0), ('f', 1), ('b', 1), ('f', 5), ('b', 0)])
    assert order == ['data', 'forward', 'backward', 'optimizer', 'other']
    assert totals == {'data': 1.0, 'forward': 4.0, 'backward': 5.0,
                      'optimizer': 1.0, 'other': 0.0}


@pytest.mark.parametrize('updated', [False, True])
def test_a_new_walk_makes_the_functions_before_it_forward(still, updated):
    counts = iter([0, 1 if updated else 0, 1])
    totals, order = drive(still, [
        ('f', 0), ('b', 0), ('f', 0), ('f', 1), ('b', 1), ('b', 0)],
        updates=lambda: next(counts))
    gap = 'optimizer' if updated else 'data'
    assert order == ['data', 'forward', 'backward', gap, 'forward',
                     'backward', 'optimizer', 'other']
    assert totals == {'data': 1.0 + (0.0 if updated else 1.0),
                      'forward': 2.0 + 4.0, 'backward': 1.0 + 3.0,
                      'optimizer': 1.0 + (1.0 if updated else 0.0),
                      'other': 0.0}

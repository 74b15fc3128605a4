"""LinkMemory on a real Trainer: keys, exact bytes, the measured iterations,
every way out, the table, arguments, snapshots, warnings and ChainerMN."""

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import LinkMemory
from chainer_hookext import TimedLinks
from tests.conftest import MLP
from tests.conftest import MaskedMLP
from tests.conftest import Boom
from tests.conftest import FakeComm
from tests.conftest import make_dataset
from tests.conftest import raise_boom
from tests.conftest import registered_hooks
from tests.conftest import hook_keys


NAMES = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
OUTSIDE = 'memory/(outside)/activations'
SUFFIXES = ['/activations', '/activations/self', '/forgettable', '/params',
            '/grads', '/optimizer_state']
PEAK_KEYS = ['memory/peak', 'memory/peak/params', 'memory/peak/grads',
             'memory/peak/optimizer_state', 'memory/peak/activations']
KEYS = sorted(['memory/' + n + s for n in NAMES for s in SUFFIXES]
              + [OUTSIDE] + PEAK_KEYS)
LINK_HOOK = 'chainer_hookext.LinkMemory'
# The thread's one node tagger, LinkMemory listening to it.
FUNCTION_HOOK = 'chainer_hookext.OutputGrads'
# The measured iteration's memory timeline (the peak, on by default).
TIMELINE_HOOK = 'chainer_hookext.MemoryTimeline'
HOOKED = ([LINK_HOOK, TIMELINE_HOOK], [TIMELINE_HOOK, FUNCTION_HOOK])

# L.Classifier(MLP(4, 8, 3)) on batches of 8 float32 examples, by hand.
# Activations (inclusive, self):
# * l1 is fed the batch (a leaf, not counted) and its output is kept by
#   no one but the relu: nothing;
# * the relu in predictor's forward retains its output: 8 x 8 x 4 = 256;
#   l2 retains that same array as its input: counted once, for the relu;
# * l2's output (8 x 3 x 4 = 96) stays alive as Classifier.y: l2's;
# * main's softmax_cross_entropy keeps its softmax (8 x 3 x 4 = 96), and
#   the loss and the accuracy (0-d float32, 4 each) stay referenced: 104.
ACTIVATIONS = {'main': (456, 104), 'main/predictor': (352, 256),
               'main/predictor/l1': (0, 0), 'main/predictor/l2': (96, 96)}
# F.forget around main frees all it keeps; around predictor the relu's
# output (kept by the relu and l2, both inside it) but not l2's output,
# which the loss outside predictor keeps too; l1 and l2 keep nothing of
# their own but their inputs and an output shared with their callers.
FORGETTABLE = {'main': 456, 'main/predictor': 256, 'main/predictor/l1': 0,
               'main/predictor/l2': 0}
# l1: W 8 x 4 and b 8 float32 (160); l2: W 3 x 8 and b 3 (108).
PARAMS = {'main': 268, 'main/predictor': 268, 'main/predictor/l1': 160,
          'main/predictor/l2': 108}


def expected(states=0):
    """The reported figures of the MLP classifier; ``states``: arrays of
    optimizer state per parameter (SGD 0, Adam 2).

    The peak (reported by default): the end of main's call, or the
    iteration's end, the same bytes alive: the parameters, their gradients
    (of the iteration before, or the new ones), the state and everything
    main keeps for backward (``L.Classifier`` keeps its graph)."""
    model = PARAMS['main']
    out = {OUTSIDE: 0, 'memory/peak/params': model,
           'memory/peak/grads': model,
           'memory/peak/optimizer_state': states * model,
           'memory/peak/activations': ACTIVATIONS['main'][0]}
    out['memory/peak'] = (2 + states) * model + ACTIVATIONS['main'][0]
    for name in NAMES:
        out.update({
            'memory/' + name + '/activations': ACTIVATIONS[name][0],
            'memory/' + name + '/activations/self': ACTIVATIONS[name][1],
            'memory/' + name + '/forgettable': FORGETTABLE[name],
            'memory/' + name + '/params': PARAMS[name],
            'memory/' + name + '/grads': PARAMS[name],
            'memory/' + name + '/optimizer_state': states * PARAMS[name]})
    return out


def recorder(records):
    """Keeps the ``memory/`` keys of each iteration's observation."""
    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_READER)
    def record(trainer):
        records[trainer.updater.iteration] = {
            k: v for k, v in trainer.observation.items()
            if k.startswith('memory/')}
    return record


def make_adam_trainer(out, stop=4, model=None):
    """A Trainer on ``L.Classifier(MLP())`` with Adam (state m and v)."""
    model = L.Classifier(MLP()) if model is None else model
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(make_dataset(), 8, shuffle=False)
    updater = training.updaters.StandardUpdater(it, optimizer)
    return training.Trainer(updater, (stop, 'iteration'), out=str(out))


def target(trainer):
    return trainer.updater.get_optimizer('main').target


def assert_released(trainer):
    assert registered_hooks(target(trainer)) == []
    assert chainer.get_function_hooks() == {}


class Spy(MLP):
    """Records the registered hooks at each forward; raises ``error`` at
    its ``at``-th call."""

    def __init__(self, error=None, at=None):
        super().__init__()
        self.error = error
        self.at = at
        self.seen = []

    def forward(self, x):
        self.seen.append((sorted(hook_keys(chainer._get_link_hooks())),
                          sorted(hook_keys(chainer.get_function_hooks()))))
        if len(self.seen) == self.at:
            raise self.error
        return super().forward(x)


def test_class_attributes():
    ext = LinkMemory()
    assert ext.trigger == (1, 'epoch')
    assert ext.priority == training.PRIORITY_WRITER
    assert ext.default_name == 'LinkMemory'
    assert ext.last_ is None
    assert ext.summary() == {}


def test_keys_and_bytes_at_the_trigger_only(trainer_factory):
    trainer = trainer_factory(stop=(4, 'iteration'))
    trainer.extend(LinkMemory(), trigger=(2, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    assert sorted(records) == [1, 2, 3, 4]
    assert records[1] == records[3] == {}
    # SGD keeps no state; no GPU peak keys per link on a CPU.
    assert records[2] == records[4] == expected(states=0)
    assert sorted(records[2]) == KEYS
    log = trainer.get_extension('LogReport').log
    assert [e['iteration'] for e in log] == [2, 4]
    for entry in log:
        assert {k: v for k, v in entry.items()
                if k.startswith('memory/')} == expected(states=0)
    assert_released(trainer)


def test_adam_state_is_two_arrays_per_parameter(tmp_path):
    trainer = make_adam_trainer(tmp_path, stop=2)
    trainer.extend(LinkMemory(), trigger=(2, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    assert records[2] == expected(states=2)
    assert records[2]['memory/main/optimizer_state'] == 2 * 268


@pytest.mark.parametrize('fp32_update', [False, True])
def test_mixed_precision_state_includes_the_float32_master_copy(
        tmp_path, fp32_update):
    with chainer.using_config('dtype', numpy.float16):
        model = L.Classifier(MLP())
    x, t = chainer.dataset.concat_examples(make_dataset()[:])
    dataset = chainer.datasets.TupleDataset(x.astype(numpy.float16), t)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    if fp32_update:
        optimizer.use_fp32_update()
    it = chainer.iterators.SerialIterator(dataset, 8, shuffle=False)
    trainer = training.Trainer(
        training.updaters.StandardUpdater(it, optimizer), (2, 'iteration'),
        out=str(tmp_path))
    trainer.extend(LinkMemory(), trigger=(2, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    # 67 float16 parameters in main (134 bytes: PARAMS / 2).  Adam's m and
    # v are of the parameter's type, float16; with use_fp32_update they are
    # float32, and so is the master copy the update rule keeps of each
    # parameter.
    for name in NAMES:
        count = PARAMS[name] // 4
        assert records[2]['memory/' + name + '/params'] == 2 * count
        assert records[2]['memory/' + name + '/optimizer_state'] == (
            3 * 4 * count if fp32_update else 2 * 2 * count)


def test_an_evaluation_in_the_measured_iteration_changes_nothing(
        trainer_factory):
    # The Evaluator (every 4 iterations, extended first) runs its forward
    # while the measured iteration's hooks are still registered.
    trainer = trainer_factory(stop=(4, 'iteration'), evaluator=True)
    trainer.extend(LinkMemory(), trigger=(1, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    assert records == {i: expected(states=0) for i in (1, 2, 3, 4)}


def check_a_mask_made_in_the_forward(trainer_factory, device):
    model = L.Classifier(MaskedMLP(4, 128, 3))
    trainer = trainer_factory(model=model, stop=(1, 'iteration'),
                              device=device)
    memory = LinkMemory()
    trainer.extend(memory, trigger=(1, 'iteration'))
    trainer.run()
    rows = {row.key: row for row in memory.last_}
    # The relu's output and the mask, 8 x 128 float32 each (4096 bytes:
    # whole chunks of CuPy's pool): the nodes of the predictor's own
    # forward keep them.
    assert rows['main/predictor'].self_activations == 2 * 4096


def test_a_mask_made_in_the_forward(trainer_factory):
    check_a_mask_made_in_the_forward(trainer_factory, '@numpy')


@pytest.mark.gpu
def test_a_mask_made_in_the_forward_gpu(trainer_factory):
    check_a_mask_made_in_the_forward(trainer_factory, '@cupy:0')


class ClearGradsFirst(training.updaters.StandardUpdater):
    """The classic loop: ``cleargrads``, forward, backward, ``update``.
    The freed gradients' arrays are gone before the forward makes its own.
    """

    def update_core(self):
        optimizer = self.get_optimizer('main')
        x, t = self.converter(self.get_iterator('main').next(), self.device)
        optimizer.target.cleargrads()
        optimizer.target(x, t).backward()
        optimizer.update()


def test_gradients_cleared_before_the_forward(tmp_path):
    model = L.Classifier(MLP())
    optimizer = chainer.optimizers.SGD(lr=0.01)
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(make_dataset(), 8, shuffle=False)
    trainer = training.Trainer(ClearGradsFirst(it, optimizer),
                               (4, 'iteration'), out=str(tmp_path))
    trainer.extend(LinkMemory(), trigger=(1, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    # Iterations 2 to 4 start with gradients that cleargrads frees.
    assert records == {i: expected(states=0) for i in (1, 2, 3, 4)}


class Tiny(chainer.Chain):
    """``sum(relu(l1(x)))``: the loss is the model's."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 8)

    def forward(self, x, t):
        return F.sum(F.relu(self.l1(x)))


@pytest.mark.parametrize('scope', ['model', 'l1'])
def test_tiny_model_bytes(trainer_factory, scope):
    model = Tiny()
    trainer = trainer_factory(model=model, stop=(1, 'iteration'))
    memory = LinkMemory(model.l1 if scope == 'l1' else None)
    trainer.extend(memory, trigger=(1, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    # l1 is fed the raw batch and keeps nothing of its own; the relu keeps
    # its output (8 x 8 float32: 256 bytes), the sum its 0-d output, the
    # loss the updater holds (4 bytes): main's, or outside l1's scope.
    links = {'memory/main/l1/' + s.lstrip('/'): v for s, v in [
        ('/activations', 0), ('/activations/self', 0), ('/forgettable', 0),
        ('/params', 160), ('/grads', 160), ('/optimizer_state', 0)]}
    # The peak is the whole model's, whatever the scope: at the iteration's
    # end, the gradients made, the graph of the loss still alive.
    links.update({'memory/peak': 580, 'memory/peak/params': 160,
                  'memory/peak/grads': 160,
                  'memory/peak/optimizer_state': 0,
                  'memory/peak/activations': 260})
    if scope == 'l1':
        assert records[1] == dict(links, **{OUTSIDE: 260})
        assert [row.key for row in memory.last_] == ['main/l1', '(outside)']
    else:
        assert records[1] == dict(links, **{
            OUTSIDE: 0, 'memory/main/activations': 260,
            'memory/main/activations/self': 260,
            'memory/main/forgettable': 260, 'memory/main/params': 160,
            'memory/main/grads': 160, 'memory/main/optimizer_state': 0})


def test_hooks_registered_during_measured_iterations_only(trainer_factory):
    model = Spy()
    trainer = trainer_factory(model=L.Classifier(model),
                              stop=(4, 'iteration'))
    trainer.extend(LinkMemory(), trigger=(2, 'iteration'))
    trainer.run()
    # The first iteration and the first after each report (2).
    assert model.seen == [HOOKED, ([], []), HOOKED, ([], [])]
    assert_released(trainer)


def _raise_at(iteration, error, seen):
    @training.make_extension(trigger=(iteration, 'iteration'))
    def raising(trainer):
        seen.append(sorted(hook_keys(chainer._get_link_hooks())))
        raise error
    return raising


WAYS_OUT = ['end', 'update_raises', 'interrupt_in_update',
            'extension_raises', 'interrupt_in_extension']


@pytest.mark.parametrize('way_out', WAYS_OUT)
def test_nothing_left_registered(trainer_factory, way_out):
    error = {'interrupt_in_update': KeyboardInterrupt()}.get(way_out)
    model = Spy(error, at=3 if error else None)  # the 2nd measured one
    trainer = trainer_factory(model=L.Classifier(model),
                              stop=(4, 'iteration'))
    trainer.extend(LinkMemory(), trigger=(2, 'iteration'))
    seen = []
    if way_out == 'update_raises':
        model.l2.forward = raise_boom  # in the first, after l1's call
    elif way_out == 'extension_raises':
        trainer.extend(_raise_at(3, Boom('extension'), seen))
    elif way_out == 'interrupt_in_extension':
        trainer.extend(_raise_at(3, KeyboardInterrupt(), seen))
    if way_out == 'end':
        trainer.run()
    else:
        expected_error = KeyboardInterrupt if 'interrupt' in way_out else Boom
        with pytest.raises(expected_error):
            trainer.run(show_loop_exception_msg=False)
    if 'extension' in way_out:  # raised while the hooks were registered
        assert seen == [HOOKED[0]]
    else:
        assert model.seen[0] == HOOKED
    assert_released(trainer)


class SleepyMLP(MLP):
    """An MLP whose forward takes ``delays[i]`` seconds at its i-th call."""

    def __init__(self, clock, delays):
        super().__init__()
        self.clock = clock
        self.delays = delays
        self.calls = 0

    def forward(self, x):
        self.clock.sleep(self.delays[self.calls])
        self.calls += 1
        return super().forward(x)


@pytest.mark.parametrize('with_timed_links', [False, True])
def test_print_report(trainer_factory, still, capsys, with_timed_links):
    delays = [2 ** -10, 3 * 2 ** -10]
    trainer = trainer_factory(model=L.Classifier(SleepyMLP(still, delays)),
                              stop=(2, 'iteration'))
    trainer.extend(LinkMemory(print_report=True), trigger=(2, 'iteration'))
    if with_timed_links:
        trainer.extend(TimedLinks(), trigger=(2, 'iteration'))
    trainer.run()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ('LinkMemory at iteration 2: bytes of one training '
                        'iteration')
    assert lines[1].split() == [
        'LinkName', 'Activations', 'SelfActivations', 'Forgettable',
        'Params', 'Grads', 'OptimizerState', 'ForwardTime']
    assert [line.split()[0] for line in lines[2:7]] == [
        'main', 'predictor', 'l1', 'l2', '(outside)']
    assert lines[3].split()[:7] == [
        'predictor', '352B', '256B', '256B', '268B', '268B', '0B']
    assert lines[3].startswith('  predictor')
    assert lines[3].endswith('0.98ms')  # the measured iteration's 2 ** -10 s
    # main/predictor alone frees something below the root: 256 bytes per
    # 2 ** -10 s (the measured iteration) or per 2 ** -9 s (TimedLinks'
    # mean over both iterations).
    per_ms = '131B/ms' if with_timed_links else '262B/ms'
    assert lines[7] == ('F.forget candidates (bytes it frees per ms of '
                        'forward time): main/predictor ' + per_ms)
    # The peak (reported by default), where, its largest parts, and what
    # F.forget would take off it: as much as it frees at that moment; not
    # around the outermost link, as the candidates above.
    assert lines[8].startswith('Peak 992B at the forward of main; largest: '
                               'main/predictor activations 256B, ')
    assert lines[-1] == ('F.forget lowers the peak: around main/predictor '
                         'by 256B')


def test_no_candidates_line_without_forward_time(trainer_factory, still,
                                                 capsys):
    trainer = trainer_factory(stop=(1, 'iteration'))
    trainer.extend(LinkMemory(print_report=True), trigger=(1, 'iteration'))
    trainer.run()
    out = capsys.readouterr().out
    assert 'LinkMemory at iteration 1' in out
    assert 'F.forget candidates' not in out


def test_summary_and_last_rows(trainer_factory):
    trainer = trainer_factory(stop=(4, 'iteration'))
    memory = LinkMemory()
    trainer.extend(memory, trigger=(2, 'iteration'))
    trainer.run()
    rows = memory.last_
    assert [(row.key, row.parent) for row in rows] == [
        ('main', None), ('main/predictor', 'main'),
        ('main/predictor/l1', 'main/predictor'),
        ('main/predictor/l2', 'main/predictor'), ('(outside)', None)]
    assert all(row.peak is None and row.backward_peak is None
               for row in rows)  # a CPU
    assert all(row.forward_time > 0 for row in rows[:4])
    assert rows[-1].forward_time is None
    summary = memory.summary()
    assert sorted(summary) == sorted(NAMES + ['(outside)'])
    for name in NAMES:
        assert summary[name] == {
            'activations': ACTIVATIONS[name][0],
            'self_activations': ACTIVATIONS[name][1],
            'forgettable': FORGETTABLE[name], 'params': PARAMS[name],
            'grads': PARAMS[name], 'optimizer_state': 0}
    assert summary['(outside)']['activations'] == 0
    assert 'forgettable' not in summary['(outside)']


# -- arguments ----------------------------------------------------------------

@pytest.mark.parametrize('kwargs,error,message', [
    ({'links': 'x'}, TypeError, r"`LinkMemory\(links='x'\)` is not a link"),
    ({'print_report': 'yes'}, TypeError,
     r"`LinkMemory\(print_report='yes'\)` is not a flag"),
    ({'local_report': True}, ValueError,
     r'`LinkMemory\(local_report=True\)` needs `comm=`'),
    ({'comm': 'naive'}, TypeError,
     r"`LinkMemory\(comm='naive'\)` is not a ChainerMN communicator"),
    ({'comm': FakeComm(0, []), 'local_report': 'yes'}, TypeError,
     r"`LinkMemory\(local_report='yes'\)` is not a flag"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        LinkMemory(**kwargs)


class Named(chainer.Chain):

    def __init__(self, name):
        super().__init__()
        with self.init_scope():
            setattr(self, name, L.Linear(4, 3))
        self.child = name

    def forward(self, x):
        return getattr(self, self.child)(x)


def test_link_named_like_a_key_suffix_is_refused(trainer_factory):
    # memory/main/predictor/backward/peak: the child's forward peak and
    # its parent's backward peak (a GPU's keys, refused on a CPU too).
    trainer = trainer_factory(model=L.Classifier(Named('backward')))
    trainer.extend(LinkMemory())
    with pytest.raises(ValueError, match=(
            r"LinkMemory: the link 'main/predictor/backward' would report "
            r"`memory/main/predictor/backward/peak`, the backward peak of "
            r"'main/predictor'; rename the link or leave it out with "
            r"`links=`")):
        trainer.run()
    assert_released(trainer)


def test_other_names_are_taken(trainer_factory):
    # Every key has a suffix: a child named like one is no clash.
    trainer = trainer_factory(model=L.Classifier(Named('activations')),
                              stop=(1, 'iteration'))
    trainer.extend(LinkMemory(), trigger=(1, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    assert records[1]['memory/main/predictor/activations/params'] == 60
    assert records[1]['memory/main/predictor/params'] == 60


def test_two_link_memories_in_one_trainer_are_refused(trainer_factory):
    trainer = trainer_factory()
    model = target(trainer)
    trainer.extend(LinkMemory(model.predictor.l1))
    trainer.extend(LinkMemory(model.predictor.l2), name='second')
    with pytest.raises(ValueError, match=(
            r"LinkMemory: the trainer has another LinkMemory extension "
            r"\('.*'\), which would measure the same iterations twice; use "
            r"one LinkMemory, with `links=` naming every link to measure")):
        trainer.run()
    assert_released(trainer)


def test_links_not_in_the_model_are_refused(trainer_factory):
    trainer = trainer_factory()
    trainer.extend(LinkMemory(L.Linear(4, 3)))
    with pytest.raises(ValueError, match=(
            r'LinkMemory\(links=\.\.\.\): .* is not part of the model')):
        trainer.run()
    assert_released(trainer)


# -- snapshots ----------------------------------------------------------------

def test_resume_reports_as_an_uninterrupted_run(tmp_path, still):
    def make(out, stop):
        trainer = make_adam_trainer(out, stop)
        memory = LinkMemory()
        trainer.extend(memory, trigger=(2, 'iteration'))
        trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
        return trainer, memory

    def reported(trainer):
        return {e['iteration']: {k: v for k, v in e.items()
                                 if k.startswith('memory/')}
                for e in trainer.get_extension('LogReport').log}

    whole, whole_memory = make(tmp_path / 'whole', 6)
    whole.run()
    first, first_memory = make(tmp_path / 'first', 4)
    first.extend(extensions.snapshot(), trigger=(2, 'iteration'))
    first.run()
    resumed, memory = make(tmp_path / 'resumed', 6)
    chainer.serializers.load_npz(
        str(tmp_path / 'first' / 'snapshot_iter_4'), resumed)
    assert memory.last_ == first_memory.last_
    assert memory.last_[0].optimizer_state == 2 * 268
    resumed.run()
    log, whole_log = reported(resumed), reported(whole)
    assert sorted(log) == sorted(whole_log) == [2, 4, 6]
    for iteration in (4, 6):
        assert sorted(log[iteration]) == KEYS
        assert log[iteration] == whole_log[iteration] == expected(states=2)
    assert memory.last_ == whole_memory.last_


def test_snapshot_before_the_first_report(tmp_path):
    first = make_adam_trainer(tmp_path / 'first', 1)
    first.extend(LinkMemory(), trigger=(2, 'iteration'))
    first.extend(recorder({}))
    first.extend(extensions.snapshot(), trigger=(1, 'iteration'))
    first.run()
    resumed = make_adam_trainer(tmp_path / 'resumed', 3)
    memory = LinkMemory()
    resumed.extend(memory, trigger=(2, 'iteration'))
    records = {}
    resumed.extend(recorder(records))
    chainer.serializers.load_npz(
        str(tmp_path / 'first' / 'snapshot_iter_1'), resumed)
    assert memory.last_ is None
    resumed.run()
    # The resumed run measures its first iteration (2), reported at 2;
    # iteration 3, measured, ends the run unreported.
    assert records[2] == expected(states=2)
    assert records[3] == {}


# -- warnings -----------------------------------------------------------------

class NoBackward(chainer.Chain):
    """Its loss is a new leaf: backward runs no step."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 3)

    def forward(self, x, t):
        loss = F.sum(self.l1(x))
        return chainer.Variable(loss.array, requires_grad=True)


def test_no_backward_warns_once_and_reports_nothing(trainer_factory):
    trainer = trainer_factory(model=NoBackward(), stop=(4, 'iteration'))
    memory = LinkMemory()
    trainer.extend(memory, trigger=(2, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    with pytest.warns(RuntimeWarning, match='LinkMemory') as caught:
        trainer.run()
    assert len([w for w in caught if 'LinkMemory' in str(w.message)]) == 1
    assert records == {1: {}, 2: {}, 3: {}, 4: {}}
    assert memory.last_ is None
    assert_released(trainer)


class Unused(MLP):
    """An MLP with a link it never calls."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.unused = L.Linear(4, 3)


def test_links_never_called_warn_once_and_report_nothing(trainer_factory):
    model = Unused()
    trainer = trainer_factory(model=L.Classifier(model),
                              stop=(4, 'iteration'))
    memory = LinkMemory(model.unused)
    trainer.extend(memory, trigger=(2, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    with pytest.warns(RuntimeWarning, match='LinkMemory') as caught:
        trainer.run()
    assert len([w for w in caught if 'LinkMemory' in str(w.message)]) == 1
    assert records == {1: {}, 2: {}, 3: {}, 4: {}}


def test_reused_in_a_new_trainer_reports_only_its_own_figures(
        trainer_factory, tmp_path):
    memory = LinkMemory()
    # Iteration 1 is measured; the run ends before the trigger reports it.
    first = trainer_factory(stop=(2, 'iteration'))
    first.extend(memory, trigger=(3, 'iteration'))
    first.run()
    assert memory.last_ is None
    second = trainer_factory(model=NoBackward(), stop=(2, 'iteration'),
                             out=tmp_path / 'second')
    second.extend(memory, trigger=(2, 'iteration'))
    records = {}
    second.extend(recorder(records))
    with pytest.warns(RuntimeWarning, match='LinkMemory'):
        second.run()
    assert records == {1: {}, 2: {}}
    assert memory.last_ is None


# -- ChainerMN, with a stand-in communicator ----------------------------------

def _run_comm(trainer_factory, comm, local_report=False,
              print_report=False):
    trainer = trainer_factory(stop=(4, 'iteration'))
    trainer.extend(LinkMemory(comm=comm, local_report=local_report,
                              print_report=print_report),
                   trigger=(2, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    return records


def test_rank0_reports_mean_and_spread(trainer_factory, capsys):
    other = {'memory/main/params': 1000, 'memory/main/predictor/l2/grads': 0}
    comm = FakeComm(0, [other])
    records = _run_comm(trainer_factory, comm, print_report=True)
    # Every rank sends its own figures at each report.
    assert comm.gathered == [expected(), expected()]
    assert records[1] == records[3] == {}
    for iteration in (2, 4):
        got = records[iteration]
        assert got['memory/main/params'] == (268 + 1000) / 2
        assert got['memory/main/params/min'] == 268
        assert got['memory/main/params/max'] == 1000
        assert got['memory/main/params/slowest_rank'] == 1
        assert got['memory/main/predictor/l2/grads'] == 54
        assert got['memory/main/predictor/l2/grads/slowest_rank'] == 0
        # Keys only rank 0 has: its figures alone.
        assert got['memory/main/predictor/l1/activations/self/min'] == 0
        assert got['memory/main/predictor/l2/activations'] == 96
        assert got['memory/main/predictor/l2/activations/max'] == 96
        assert got['memory/main/predictor/l2/activations/slowest_rank'] == 0
        assert sorted(got) == sorted(
            KEYS + [k + '/' + s for k in KEYS
                    for s in ('min', 'max', 'slowest_rank')])
    out = capsys.readouterr().out
    assert out.count('LinkMemory at iteration') == 2


@pytest.mark.parametrize('local_report', [False, True])
def test_other_ranks_report_locally_only_if_asked(trainer_factory, capsys,
                                                  local_report):
    comm = FakeComm(1, [{}])
    records = _run_comm(trainer_factory, comm, local_report,
                        print_report=True)
    assert comm.gathered == [expected(), expected()]
    out = capsys.readouterr().out
    if local_report:
        assert records[2] == records[4] == expected()
        assert out.count('LinkMemory at iteration') == 2
    else:
        assert all(r == {} for r in records.values())
        assert out == ''


def test_every_rank_gathers_even_when_nothing_was_measured(trainer_factory):
    comm = FakeComm(0, [{'memory/main/params': 1}])
    trainer = trainer_factory(model=NoBackward(), stop=(4, 'iteration'))
    trainer.extend(LinkMemory(comm=comm), trigger=(2, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    with pytest.warns(RuntimeWarning, match='LinkMemory'):
        trainer.run()
    assert comm.gathered == [{}, {}]
    assert all(r == {} for r in records.values())


def test_peak_reported_by_default_and_off_with_peak_false(trainer_factory):
    trainer = trainer_factory(stop=(1, 'iteration'))
    trainer.extend(LinkMemory(peak=False), trigger=(1, 'iteration'))
    records = {}
    trainer.extend(recorder(records))
    trainer.run()
    assert sorted(records[1]) == sorted(set(KEYS) - set(PEAK_KEYS))
    assert trainer.get_extension('LinkMemory').peak_summary() is None


def test_a_link_named_peak_is_refused(tmp_path):
    model = L.Classifier(MLP())
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(make_dataset(), 8)
    updater = training.updaters.StandardUpdater(it, {'peak': optimizer})
    trainer = training.Trainer(updater, (1, 'iteration'), out=str(tmp_path))
    trainer.extend(LinkMemory(model))
    with pytest.raises(ValueError, match=r"LinkMemory: the link 'peak' "
                       r"would report `memory/peak/activations`.*peak=False"):
        trainer.run(show_loop_exception_msg=False)

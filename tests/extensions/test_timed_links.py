import json

import chainer
import chainer.functions as F
import chainer.links as L
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import _state
from chainer_hookext import TimedLinks
from tests.conftest import FakeComm
from tests.conftest import occurrences
from tests.conftest import registered_hooks


NAMES = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
FORWARD_KEYS = sorted(['time/' + n for n in NAMES] +
                      ['time/' + n + '/self' for n in NAMES])
KEYS = sorted(FORWARD_KEYS + ['time/' + n + '/backward' for n in NAMES] +
              ['time/' + n + '/backward/self' for n in NAMES] +
              ['time/(outside)/backward'])


def recorder(records, ext):
    """Keeps, after each report, the reported times and the hook's totals.

    ``records[iteration]``: (times, total forward time, total backward
    time), totals of training mode.
    """
    @training.make_extension(trigger=(1, 'iteration'),
                             priority=training.PRIORITY_READER)
    def record(trainer):
        times = {k: v for k, v in trainer.observation.items() if 'time/' in k}
        if times:
            records[trainer.updater.iteration] = (
                times, ext.hook.total_time('train'),
                ext.hook.total_backward_time('train'))
    return record


def test_class_attributes():
    ext = TimedLinks()
    assert ext.trigger == (1, 'epoch')
    assert ext.priority == training.PRIORITY_WRITER
    assert ext.default_name == 'TimedLinks'


def test_keys_for_log_print_and_plot_report(trainer_factory, tmp_path):
    trainer = trainer_factory(stop=(2, 'epoch'))
    trainer.extend(TimedLinks())
    trainer.extend(extensions.LogReport())
    trainer.extend(extensions.PrintReport(
        ['epoch', 'time/main', 'time/main/predictor/l1/self']),
        name='print')
    trainer.extend(extensions.PlotReport(
        ['time/main', 'time/main/predictor'], filename='time.png'))
    trainer.run()
    with open(str(tmp_path / 'result' / 'log')) as f:
        log = json.load(f)
    assert [entry['epoch'] for entry in log] == [1, 2]
    for entry in log:
        assert sorted(k for k in entry if 'time/' in k) == KEYS
        # The loss is computed in the Classifier: nothing outside.
        assert entry.pop('time/(outside)/backward') == 0
        assert all(entry[k] > 0 for k in KEYS if k in entry)
        for kind in ('', '/backward'):
            selves = sum(entry['time/' + n + kind + '/self'] for n in NAMES)
            assert selves == pytest.approx(
                entry['time/main' + kind], rel=1e-9)
            assert entry['time/main/predictor' + kind] < entry[
                'time/main' + kind]
    assert (tmp_path / 'result' / 'time.png').exists()
    model = trainer.updater.get_optimizer('main').target
    assert registered_hooks(model) == []


def test_values_are_averages_per_iteration(trainer_factory):
    trainer = trainer_factory(stop=(6, 'iteration'))
    ext = TimedLinks()
    records = {}
    trainer.extend(ext, trigger=(2, 'iteration'))
    trainer.extend(recorder(records, ext))
    trainer.run()
    assert sorted(records) == [2, 4, 6]
    previous = (0.0, 0.0)
    for iteration in (2, 4, 6):
        times, total, backward = records[iteration]
        assert times['time/main'] * 2 == pytest.approx(
            total - previous[0], rel=1e-9)
        assert times['time/main/backward'] * 2 == pytest.approx(
            backward - previous[1], rel=1e-9)
        previous = total, backward
    assert occurrences(ext.summary()) == {
        '/': 6, '/predictor': 6, '/predictor/l1': 6, '/predictor/l2': 6}


def test_evaluator_not_counted(trainer_factory):
    trainer = trainer_factory(stop=(8, 'iteration'), evaluator=True)
    ext = TimedLinks()
    trainer.extend(ext)
    trainer.extend(extensions.LogReport())
    trainer.run()
    assert occurrences(ext.summary())['/'] == 8
    assert ext.summary(mode='eval') == {}
    assert not [k for k in trainer.observation if 'validation/time' in k]


def test_validation_reported_apart(trainer_factory):
    trainer = trainer_factory(stop=(8, 'iteration'), evaluator=True)
    ext = TimedLinks(validation=True)
    records = {}
    trainer.extend(ext)
    trainer.extend(recorder(records, ext))
    trainer.run()
    # Two evaluations of two batches each; training calls unchanged.
    assert ext.hook.total_calls('eval') == 4
    assert occurrences(ext.summary())['/'] == 8
    assert sorted(records) == [4, 8]
    for times, _, _ in records.values():
        assert sorted(k for k in times if k.startswith('time/')) == KEYS
        # No backward in evaluation: forward keys only.
        assert sorted(k[len('validation/'):] for k in times
                      if k.startswith('validation/')) == FORWARD_KEYS
    per_call = sum(times['validation/time/main'] * 2
                   for times, _, _ in records.values())
    assert per_call == pytest.approx(ext.hook.total_time('eval'), rel=1e-9)


def test_print_report(trainer_factory, capsys):
    trainer = trainer_factory(stop=(4, 'iteration'))
    trainer.extend(TimedLinks(print_report=True, unit='us'))
    trainer.run()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ('TimedLinks at iteration 4: seconds per training '
                        'iteration, averaged over 4 iterations')
    assert lines[1].split() == [
        'LinkName', 'ElapsedTime', 'SelfTime', 'BackwardTime', 'BackwardSelf',
        'Occurrence']
    assert [line.split()[0] for line in lines[2:]] == [
        'main', 'predictor', 'l1', 'l2']
    assert all(len(line.split()) == 6 for line in lines[2:])
    assert lines[3].startswith('  predictor') and lines[3].endswith(' 4')
    assert 'us' in lines[2]


@pytest.mark.parametrize('snapshot_at', [3, 4])
def test_resume_is_exact(trainer_factory, tmp_path, snapshot_at):
    def make(stop):
        trainer = trainer_factory(stop=(stop, 'iteration'), evaluator=True)
        ext = TimedLinks(validation=True)
        records = {}
        trainer.extend(ext, trigger=(2, 'iteration'))
        trainer.extend(recorder(records, ext))
        trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
        return trainer, ext, records

    whole, whole_ext, whole_records = make(7)
    whole.run()

    first, _, first_records = make(snapshot_at)
    first.extend(extensions.snapshot(), trigger=(snapshot_at, 'iteration'))
    first.run()
    resumed, ext, records = make(7)
    chainer.serializers.load_npz(
        str(tmp_path / 'result' / 'snapshot_iter_{}'.format(snapshot_at)),
        resumed)
    resumed.run()

    records.update({i: r for i, r in first_records.items() if i not in
                    records})
    assert sorted(records) == sorted(whole_records) == [2, 4, 6]
    for iteration, (times, _, _) in whole_records.items():
        assert sorted(records[iteration][0]) == sorted(times)
    for by in ('class', 'path', 'name'):
        for mode in ('train', 'eval'):
            assert occurrences(ext.summary(by, mode)) == occurrences(
                whole_ext.summary(by, mode))
    # The first report after resuming averages since the report before the
    # snapshot, restored from it.
    before = max(i for i in first_records if i <= snapshot_at)
    times, total, backward = records[before + 2]
    assert times['time/main'] * 2 == pytest.approx(
        total - first_records[before][1], rel=1e-9)
    assert times['time/main/backward'] * 2 == pytest.approx(
        backward - first_records[before][2], rel=1e-9)
    for by in ('path', 'name'):
        assert sorted(ext.summary(by)) == sorted(whole_ext.summary(by))
        assert ext.summary(by)['/' if by == 'path' else 'main'][
            'backward_time'] > 0


def test_resume_from_a_snapshot_before_the_first_report(
        trainer_factory, tmp_path):
    def make(stop):
        trainer = trainer_factory(stop=(stop, 'iteration'))
        ext = TimedLinks()
        records = {}
        trainer.extend(ext, trigger=(4, 'iteration'))
        trainer.extend(recorder(records, ext))
        return trainer, ext, records

    first, _, _ = make(2)
    first.extend(extensions.snapshot(), trigger=(2, 'iteration'))
    first.run()
    resumed, ext, records = make(4)
    chainer.serializers.load_npz(
        str(tmp_path / 'result' / 'snapshot_iter_2'), resumed)
    resumed.run()
    times, total, backward = records[4]
    assert times['time/main'] * 4 == pytest.approx(total, rel=1e-9)
    assert times['time/main/backward'] * 4 == pytest.approx(
        backward, rel=1e-9)


def test_saved_baseline_layout(trainer_factory):
    # The layout snapshots have: labels [mode, key, parent], a column per
    # numeric field of an entry.  Snapshots of earlier runs must load.
    trainer = trainer_factory(stop=(5, 'iteration'), evaluator=True)
    ext = TimedLinks(validation=True)
    trainer.extend(ext, trigger=(4, 'iteration'))  # after an evaluation
    trainer.run()
    target = {}
    ext.serialize(chainer.serializers.DictionarySerializer(target))
    fields = ('elapsed_time', 'self_time', 'occurrence', 'backward_time',
              'backward_self_time', 'flops', 'self_flops', 'backward_flops',
              'backward_self_flops', 'bytes', 'backward_bytes')
    assert sorted(k for k in target if k.startswith('baseline/')) == sorted(
        ['baseline/labels'] + ['baseline/' + f for f in fields])
    rows = _state.load_rows(chainer.serializers.NpzDeserializer(
        target, path='baseline/'), fields)
    assert [labels for labels, _ in rows] == [
        ['train', 'main', None], ['train', 'main/predictor', 'main'],
        ['train', 'main/predictor/l1', 'main/predictor'],
        ['train', 'main/predictor/l2', 'main/predictor'],
        ['eval', 'main', None], ['eval', 'main/predictor', 'main'],
        ['eval', 'main/predictor/l1', 'main/predictor'],
        ['eval', 'main/predictor/l2', 'main/predictor']]
    assert rows[0][1]['occurrence'] == 4
    loaded = TimedLinks(validation=True)
    loaded.serialize(chainer.serializers.NpzDeserializer(target))
    assert loaded._baseline == ext._baseline
    assert loaded._last_iteration == 4


# Chainer's IntervalTrigger of the new extension also finds no state.
@pytest.mark.filterwarnings('ignore:The previous value of')
def test_snapshot_without_its_state(trainer_factory, tmp_path):
    first = trainer_factory(stop=(2, 'iteration'))
    first.extend(extensions.snapshot(), trigger=(2, 'iteration'))
    first.run()
    resumed = trainer_factory(stop=(6, 'iteration'))
    ext = TimedLinks()
    records = {}
    resumed.extend(ext, trigger=(2, 'iteration'))
    resumed.extend(recorder(records, ext))
    with pytest.warns(RuntimeWarning, match='no state for it'):
        chainer.serializers.load_npz(
            str(tmp_path / 'result' / 'snapshot_iter_2'), resumed)
    resumed.run()
    assert sorted(records) == [4, 6]
    assert records[4][0]['time/main'] * 2 == pytest.approx(
        records[4][1], rel=1e-9)


def test_links_sub_tree(trainer_factory):
    trainer = trainer_factory(stop=(2, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    ext = TimedLinks(links=model.predictor.l1)
    records = {}
    trainer.extend(ext, trigger=(2, 'iteration'))
    trainer.extend(recorder(records, ext))
    trainer.run()
    # Backward of the nodes created outside l1 (relu, l2, the loss).
    assert sorted(records[2][0]) == [
        'time/(outside)/backward', 'time/main/predictor/l1',
        'time/main/predictor/l1/backward',
        'time/main/predictor/l1/backward/self',
        'time/main/predictor/l1/self']
    assert records[2][0]['time/(outside)/backward'] > 0
    assert occurrences(ext.summary()) == {'/predictor/l1': 2, '(outside)': 0}


class SelfNamed(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.self = L.Linear(4, 3)

    def forward(self, x):
        return self.self(x)


def test_link_named_self_is_refused(trainer_factory):
    trainer = trainer_factory(model=L.Classifier(SelfNamed()))
    trainer.extend(TimedLinks())
    with pytest.raises(ValueError, match="'main/predictor/self' would report "
                       "`time/main/predictor/self`, the self time"):
        trainer.run()


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"TimedLinks\(validation='yes'\)"):
        TimedLinks(validation='yes')
    with pytest.raises(TypeError, match=r'TimedLinks\(print_report=1\)'):
        TimedLinks(print_report=1)
    with pytest.raises(ValueError, match=r"TimedLinks\(unit='min'\)"):
        TimedLinks(unit='min')
    with pytest.raises(TypeError, match='links='):
        TimedLinks(links='main')


def test_two_timed_links_in_one_trainer_are_refused(trainer_factory):
    trainer = trainer_factory()
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(TimedLinks(model.predictor.l1))
    trainer.extend(TimedLinks(model.predictor.l2), name='second')
    with pytest.raises(ValueError, match=r"another TimedLinks extension "
                       r"\('.*'\).*one TimedLinks, with `links=`"):
        trainer.run()
    assert chainer._get_link_hooks() == {}


def test_reused_with_a_new_updater_reports_from_its_start(trainer_factory):
    timed = TimedLinks()
    reported = []
    for _ in range(2):
        trainer = trainer_factory(stop=(6, 'iteration'))
        trainer.extend(timed, trigger=(2, 'iteration'))
        trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
        trainer.run()
        reported.append([e['iteration'] for e in
                         trainer.get_extension('LogReport').log
                         if 'time/main' in e])
    assert reported == [[2, 4, 6], [2, 4, 6]]


def test_links_named_like_a_spread_are_refused_before_training(
        trainer_factory):
    class Named(chainer.Chain):
        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.max = L.Linear(4, 3)

        def forward(self, x):
            return self.max(x)

    trainer = trainer_factory(model=L.Classifier(Named()))
    comm = FakeComm(0, [])
    trainer.extend(TimedLinks(comm=comm))
    with pytest.raises(ValueError, match="'main/predictor/max' would report"):
        trainer.run()
    assert comm.gathered == []  # refused before any collective


class OldStyle(chainer.Chain):
    """Defines ``__call__`` instead of ``forward``: no link hook sees it."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 8)
            self.l2 = L.Linear(8, 3)

    def __call__(self, x, t):
        loss = F.softmax_cross_entropy(self.l2(F.relu(self.l1(x))), t)
        chainer.report({'loss': loss}, self)
        return loss


def test_model_defining_call_is_named_and_figures_are_per_model_call(
        trainer_factory, capsys):
    trainer = trainer_factory(model=OldStyle(), evaluator=True,
                              stop=(4, 'iteration'))  # one epoch
    trainer.extend(TimedLinks(validation=True, print_report=True),
                   trigger=(4, 'iteration'))
    with pytest.warns(RuntimeWarning, match=r"TimedLinks: 'main' define "
                      r'__call__ instead of forward.*rename'):
        trainer.run()
    out = capsys.readouterr().out
    # The Evaluator made 2 calls of the model (16 examples, batches of 8).
    assert 'evaluation call of the model, averaged over 2 calls' in out

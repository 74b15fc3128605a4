"""TimedLinks(flops=True): FLOPs per link in the observation, the roofline."""

import warnings

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLinks
from chainer_hookext.costs import peaks
from chainer_hookext.report import keys
from chainer_hookext.timing import records
from tests.conftest import FakeComm
from tests.conftest import make_dataset
from tests.conftest import MLP
from tests.conftest import Twice

# make_trainer's L.Classifier(MLP(4, 8, 3)) on batches of 8, per iteration
# (tests/costs/test_counter.py derives them for a batch of 2; every term is
# linear in the batch):
FLOPS = {
    'flops/main': 147 * 8, 'flops/main/self': 16 * 8,
    'flops/main/backward': 194 * 8, 'flops/main/backward/self': 15 * 8,
    'flops/main/predictor': 131 * 8, 'flops/main/predictor/self': 8 * 8,
    'flops/main/predictor/backward': 179 * 8,
    'flops/main/predictor/backward/self': 8 * 8,
    'flops/main/predictor/l1': 72 * 8, 'flops/main/predictor/l1/self': 72 * 8,
    'flops/main/predictor/l1/backward': 72 * 8,
    'flops/main/predictor/l1/backward/self': 72 * 8,
    'flops/main/predictor/l2': 51 * 8, 'flops/main/predictor/l2/self': 51 * 8,
    'flops/main/predictor/l2/backward': 99 * 8,
    'flops/main/predictor/l2/backward/self': 99 * 8,
    'flops/(outside)/backward': 0,
}
#: Peaks no CPU reaches with this model: no warning.
HIGH = dict(peak_flops=1e15, peak_bandwidth=1e15)


def run(trainer_factory, stop=4, trigger=2, evaluator=False, **kwargs):
    trainer = trainer_factory(stop=(stop, 'iteration'), evaluator=evaluator)
    ext = TimedLinks(flops=True, **dict(HIGH, **kwargs))
    trainer.extend(ext, trigger=(trigger, 'iteration'))
    log = extensions.LogReport(trigger=(trigger, 'iteration'))
    trainer.extend(log)
    trainer.run()
    return trainer, ext, [
        {k: v for k, v in e.items() if k.startswith(
            ('flops/', 'validation/flops/'))} for e in log.log]


def test_flops_per_iteration_in_the_observation(trainer_factory):
    _, ext, log = run(trainer_factory)
    assert log == [FLOPS, FLOPS]
    summary = ext.summary(by='name')
    assert summary['main']['flops'] == 4 * FLOPS['flops/main']
    assert summary['main']['backward_flops'] == (
        4 * FLOPS['flops/main/backward'])


def test_validation_flops_per_evaluation_call(trainer_factory):
    _, _, log = run(trainer_factory, evaluator=True, validation=True)
    assert 'validation/flops/main' not in log[0]  # no evaluation yet
    for entry in log[1:]:
        assert entry['validation/flops/main'] == 147 * 8
        assert entry['validation/flops/main/predictor/l1/self'] == 72 * 8
        assert 'validation/flops/main/backward' not in entry


def test_without_flops_no_flops_key(trainer_factory):
    trainer = trainer_factory(stop=(2, 'iteration'))
    trainer.extend(TimedLinks(), trigger=(2, 'iteration'))
    log = extensions.LogReport(trigger=(2, 'iteration'))
    trainer.extend(log)
    trainer.run()
    assert not [k for k in log.log[0] if 'flops' in k]
    assert 'flops' not in TimedLinks().summary(by='path').get('/', {})


def test_print_report_has_the_roofline_columns(trainer_factory, capsys):
    run(trainer_factory, stop=2, print_report=True)
    lines = capsys.readouterr().out.splitlines()
    # Two blocks, each with the links' column, to fit the console.
    assert lines[1].split() == [
        'LinkName', 'ElapsedTime', 'SelfTime', 'BackwardTime',
        'BackwardSelf', 'Occurrence']
    second = lines.index(next(line for line in lines[2:]
                              if line.startswith('LinkName')))
    assert lines[second].split() == [
        'LinkName', 'FLOPs', 'FLOP/s', 'Peak%', 'Bound',
        'BwdFLOPs', 'BwdFLOP/s', 'BwdPeak%', 'BwdBound']
    l2 = lines[second + 4].split()
    assert l2[0] == 'l2'
    assert l2[1] == '408' and l2[5] == '792'  # FLOPs, BwdFLOPs
    assert l2[4] in ('compute', 'memory', 'overhead')


def test_roofline_of_the_run(trainer_factory):
    _, ext, _ = run(trainer_factory, peak_flops=1e12, peak_bandwidth=1e11)
    points = ext.roofline(by='name')
    l1 = points['main/predictor/l1']
    assert l1.forward.flops == 4 * 72 * 8
    assert l1.forward.rate == pytest.approx(
        l1.forward.flops / l1.forward.seconds)
    assert 0 < l1.forward.percent < 100
    # Ridge: 10 FLOPs per byte; a linear layer of 4 inputs does less, far
    # below that roof: its Python's time bounds it.
    assert l1.forward.roof == 'memory'
    assert l1.forward.bound == 'overhead'
    assert l1.backward.flops == 4 * 72 * 8


def test_peaks_are_measured_once_on_the_model_device(
        trainer_factory, monkeypatch):
    calls = []

    def measure(xp, dtype):
        calls.append((xp.__name__, str(dtype)))
        return peaks.Peaks(1e15, 1e15)
    monkeypatch.setattr(peaks, 'measure', measure)
    trainer = trainer_factory(stop=(2, 'iteration'))
    ext = TimedLinks(flops=True, peak_bandwidth=5e14)
    trainer.extend(ext)
    trainer.run()
    assert calls == [('numpy', 'float32')]
    assert ext.roofline_.peaks == peaks.Peaks(1e15, 5e14)  # given: kept


def test_a_peak_too_low_is_raised_with_one_warning(trainer_factory):
    with pytest.warns(RuntimeWarning, match='above the peaks') as caught:
        _, ext, _ = run(trainer_factory, stop=4, print_report=True,
                        peak_flops=1.0, peak_bandwidth=1.0)
    assert len([w for w in caught if 'above the peaks' in str(
        w.message)]) == 1
    for point in ext.roofline(by='name').values():
        for p in point:
            assert p is None or p.percent <= 100.0 + 1e-9


def test_resume_is_exact(trainer_factory, tmp_path):
    def make(stop):
        trainer = trainer_factory(stop=(stop, 'iteration'))
        trainer.extend(TimedLinks(flops=True, **HIGH),
                       trigger=(2, 'iteration'))
        trainer.extend(extensions.LogReport(trigger=(2, 'iteration')))
        return trainer

    straight = make(6)
    straight.run()
    first = make(3)
    first.extend(extensions.snapshot(), trigger=(3, 'iteration'))
    first.run()
    resumed = make(6)
    chainer.serializers.load_npz(
        str(tmp_path / 'result' / 'snapshot_iter_3'), resumed)
    resumed.run()

    def flops(trainer):
        return [{k: v for k, v in e.items() if k.startswith('flops/')}
                for e in trainer.get_extension('LogReport').log]
    assert flops(resumed) == flops(straight)
    assert (resumed.get_extension('TimedLinks').summary()['/']['flops']
            == 6 * 147 * 8)


def test_snapshot_from_before_flops_loads(trainer_factory, tmp_path):
    first = trainer_factory(stop=(2, 'iteration'))
    first.extend(TimedLinks(), trigger=(2, 'iteration'))
    first.extend(extensions.LogReport(trigger=(2, 'iteration')))
    target = {}
    first.run()
    first.serialize(chainer.serializers.DictionarySerializer(target))
    for key in list(target):  # a snapshot without any cost column
        if key.endswith(('flops', 'bytes')) or '/unknown/' in key:
            del target[key]
    resumed = trainer_factory(stop=(4, 'iteration'))
    ext = TimedLinks(flops=True, **HIGH)
    resumed.extend(ext, trigger=(2, 'iteration'))
    log = extensions.LogReport(trigger=(2, 'iteration'))
    resumed.extend(log)
    with warnings.catch_warnings():
        warnings.simplefilter('error', RuntimeWarning)  # no "afresh"
        resumed.serialize(chainer.serializers.NpzDeserializer(target))
    resumed.run()
    assert log.log[-1]['flops/main'] == FLOPS['flops/main']
    assert ext.summary()['/']['occurrence'] == 4
    assert ext.summary()['/']['flops'] == 2 * FLOPS['flops/main']


def test_gathered_over_workers(trainer_factory):
    other = [keys.Report('train', 1, [records.empty_entry(
        'main/predictor/l1', 'main/predictor')._replace(flops=10 ** 6)])]
    trainer = trainer_factory(stop=(1, 'iteration'))
    trainer.extend(TimedLinks(flops=True, comm=FakeComm(0, [other]), **HIGH),
                   trigger=(1, 'iteration'))
    log = extensions.LogReport(trigger=(1, 'iteration'))
    trainer.extend(log)
    trainer.run()
    [entry] = log.log
    assert entry['flops/main/predictor/l1/max'] == 10 ** 6
    assert entry['flops/main/predictor/l1/slowest_rank'] == 1
    assert entry['flops/main/predictor/l1/min'] == 72 * 8
    assert entry['flops/main/predictor/l1'] == (10 ** 6 + 72 * 8) / 2
    assert entry['flops/main/backward/self'] == 15 * 8  # rank 0's alone


class WithUnknown(chainer.links.Classifier):

    def forward(self, x, t):
        return super().forward(Twice().apply((x,))[0], t)


def test_unknown_function_types_are_listed(trainer_factory, capsys):
    trainer = trainer_factory(stop=(2, 'iteration'),
                              model=WithUnknown(MLP()))
    ext = TimedLinks(flops=True, print_report=True, **HIGH)
    trainer.extend(ext, trigger=(2, 'iteration'))
    trainer.run()
    unknown = ext.unknown_functions(by='name')
    assert list(unknown) == ['Twice']
    assert unknown['Twice']['nodes'] == 2  # forward only: x is an array
    assert unknown['Twice']['links'] == {'main': 2}
    assert 0 < unknown['Twice']['time_share'] < 1
    out = capsys.readouterr().out
    assert 'Function types without a FLOP formula (not counted):' in out
    assert '  Twice: 2 nodes, in main (' in out


@pytest.mark.parametrize('kwargs, error, match', [
    (dict(flops=True, backward=False), ValueError, 'keep `backward=True`'),
    (dict(peak_flops=1e12), ValueError, 'needs `flops=True`'),
    (dict(flops=True, peak_flops=0), ValueError, 'peak_flops=0'),
    (dict(flops=True, peak_bandwidth='fast'), TypeError,
     "peak_bandwidth='fast'"),
    (dict(flops=1), TypeError, 'flops=1'),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        TimedLinks(**kwargs)


def test_roofline_needs_flops_and_a_start():
    with pytest.raises(RuntimeError, match='flops=True'):
        TimedLinks().roofline()
    with pytest.raises(RuntimeError, match='when training starts'):
        TimedLinks(flops=True).roofline()


def test_class_attribute_defaults():
    ext = TimedLinks()
    assert ext.flops is False
    assert ext.peak_flops is None and ext.peak_bandwidth is None
    assert training.PRIORITY_WRITER == ext.priority


class Grows(chainer.Chain):
    """MLP whose third call adds a layer ``l3``, called from then on."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 8)
            self.l2 = L.Linear(8, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 3:
            with self.init_scope():
                self.l3 = L.Linear(3, 3)
        h = self.l2(F.relu(self.l1(x)))
        return self.l3(h) if hasattr(self, 'l3') else h


def test_a_link_added_during_training_is_reported_from_the_next_report(
        trainer_factory, capsys):
    trainer = trainer_factory(stop=(6, 'iteration'),
                              model=L.Classifier(Grows()))
    ext = TimedLinks(flops=True, print_report=True, **HIGH)
    trainer.extend(ext, trigger=(2, 'iteration'))
    log = extensions.LogReport(trigger=(2, 'iteration'))
    trainer.extend(log)
    with pytest.warns(RuntimeWarning) as caught:
        trainer.run()
    assert [str(w.message) for w in caught] == [
        "TimedLinks: the link 'main/predictor/l3' was added to the model "
        "during training; its figures are reported from iteration 4 on (its "
        "calls since iteration 2), and its parent's figures include them."]
    assert 'time/main/predictor/l3' not in log.log[0]
    for entry in log.log:
        for kind in ('flops', 'time'):
            children = [k for k in entry if k.startswith(
                kind + '/main/predictor/l') and k.count('/') == 3]
            assert len(children) == (2 if entry is log.log[0] else 3)
            assert entry[kind + '/main/predictor'] == pytest.approx(
                entry[kind + '/main/predictor/self'] + sum(
                    entry[k] for k in children))
    assert log.log[1]['flops/main/predictor/l3'] == 21 * 8
    out = capsys.readouterr().out.splitlines()
    at = out.index(next(line for line in out if line.startswith('    l3')))
    assert out[at - 1].startswith('    l2')  # under predictor, in its place


def test_peaks_wait_for_the_first_parameters_and_take_their_dtype(
        tmp_path, monkeypatch):
    # L.Linear(None, n, nobias=True): no parameter before the first forward,
    # then float64 ones (the config's dtype).
    calls = []

    def measure(xp=numpy, dtype=numpy.float32):
        calls.append((xp.__name__, numpy.dtype(dtype).name))
        return peaks.Peaks(1e15, 1e15)
    monkeypatch.setattr(peaks, 'measure', measure)
    monkeypatch.setattr(chainer.global_config, 'dtype', numpy.float64)
    dataset = make_dataset()
    dataset = chainer.datasets.TupleDataset(
        dataset._datasets[0].astype(numpy.float64), dataset._datasets[1])
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(L.Classifier(L.Linear(None, 3, nobias=True)))
    trainer = training.Trainer(training.updaters.StandardUpdater(
        chainer.iterators.SerialIterator(dataset, 8), optimizer),
        (4, 'iteration'), out=str(tmp_path))
    ext = TimedLinks(flops=True)
    trainer.extend(ext, trigger=(2, 'iteration'))
    seen = []
    trainer.extend(lambda t: seen.append(list(calls)),
                   trigger=(1, 'iteration'), priority=1000)
    trainer.run()
    assert seen[0] == []  # nothing measured in the first iteration's update
    assert calls == [('numpy', 'float64')]
    assert ext.roofline_.peaks == peaks.Peaks(1e15, 1e15)


def test_roofline_before_any_report_measures_the_peaks(
        trainer_factory, monkeypatch):
    calls = []

    def measure(xp=numpy, dtype=numpy.float32):
        calls.append(dtype)
        return peaks.Peaks(1e15, 1e15)
    monkeypatch.setattr(peaks, 'measure', measure)
    model = L.Classifier(L.Linear(None, 3, nobias=True))
    trainer = trainer_factory(stop=(1, 'iteration'), model=model)
    ext = TimedLinks(flops=True)
    trainer.extend(ext, trigger=(2, 'iteration'))  # never reports
    trainer.run()
    assert calls == []
    assert ext.roofline(by='name')['main/predictor'].forward.flops > 0
    assert calls == [numpy.float32]

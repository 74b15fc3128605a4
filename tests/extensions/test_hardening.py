"""Hardening, second pass: old snapshots (npz non-strict, hdf5), whole-run
summaries, reused extensions, NumPy scalars as arguments."""

import re

import chainer
import numpy
import pytest
from chainer.training import extensions

from chainer_hookext import _checks
from chainer_hookext import ActivationStatistics
from chainer_hookext import ActivationStatisticsHook
from chainer_hookext import CallbackHook
from chainer_hookext import CaptureOutputs
from chainer_hookext import CaptureOutputsHook
from chainer_hookext import LinkHookExtension
from chainer_hookext import NonFiniteGuard
from chainer_hookext import NonFiniteHook
from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from chainer_hookext import Timeline
from chainer_hookext import TimerHook
from chainer_hookext import UnchainVariables
from tests.conftest import BACKWARD
from tests.conftest import DATA
from tests.conftest import FORWARD
from tests.conftest import OPTIMIZER
from tests.conftest import SLOW
from tests.conftest import make_slow_trainer
from tests.conftest import occurrences


def odd(trainer):
    # A trigger without state.  Chainer 7.8.1's IntervalTrigger.serialize
    # catches KeyError only: it cannot load an hdf5 snapshot taken before
    # its extension was added (ValueError('Inexistent group is specified')).
    return trainer.updater.iteration % 2 == 1


def save(trainer, path, fmt):
    if fmt == 'hdf5':
        chainer.serializers.save_hdf5(path, trainer)
    else:
        chainer.serializers.save_npz(path, trainer)


def load(path, trainer, fmt):
    if fmt == 'hdf5':
        chainer.serializers.load_hdf5(path, trainer)
    else:
        chainer.serializers.load_npz(
            path, trainer, strict=fmt != 'npz-non-strict')


# -- 1, 2: snapshots taken before the extension was added ---------------------

EXTENSIONS = {
    'TimedLinks': TimedLinks,
    'TimedLoop': TimedLoop,
    'Timeline': Timeline,
    'UnchainVariables': UnchainVariables,
    'LinkHookExtension': lambda: LinkHookExtension(TimerHook()),
}


def _cases():
    for name in EXTENSIONS:
        for fmt in ('npz', 'npz-non-strict', 'hdf5'):
            yield pytest.param(name, fmt, id=name + '-' + fmt)


@pytest.mark.parametrize('name,fmt', list(_cases()))
def test_snapshot_without_its_state_warns_once_and_starts_afresh(
        name, fmt, still, tmp_path):
    path = str(tmp_path / 'snapshot')
    first = make_slow_trainer(still, tmp_path / 'first', stop=2)
    first.run()
    save(first, path, fmt)
    resumed = make_slow_trainer(still, tmp_path / 'resumed', stop=4)
    ext = EXTENSIONS[name]()
    if name == 'UnchainVariables':
        resumed.extend(ext)  # its trigger is its own, without state
    else:
        resumed.extend(ext, trigger=odd)
    with pytest.warns(RuntimeWarning) as caught:
        load(path, resumed, fmt)
    assert len(caught) == 1
    assert re.search('no state for (it|hook)', str(caught[0].message))
    resumed.run()
    assert resumed.updater.iteration == 4
    if name == 'TimedLinks':
        assert occurrences(ext.summary())['/'] == 2
    elif name == 'TimedLoop':
        assert ext.summary()['data'] == DATA
    elif name == 'Timeline':
        assert [p.rsplit('/', 1)[1] for p in ext.written] == [
            'iteration_4.json.gz']
    elif name == 'LinkHookExtension':
        assert occurrences(ext.hook.summary(by='path'))['/'] == 2


def _run_all(still, out, stop, path=None, fmt=None):
    # Every extension with a state, then (stop - 2) iterations more.
    trainer = make_slow_trainer(still, out, stop=stop)
    loop, links = TimedLoop(), TimedLinks()
    trainer.extend(loop, trigger=(2, 'iteration'))
    trainer.extend(links, trigger=(2, 'iteration'))
    trainer.extend(Timeline(iterations=1), trigger=(2, 'iteration'))
    trainer.extend(UnchainVariables())
    if path is not None:
        load(path, trainer, fmt)
    trainer.run()
    return trainer, loop, links


@pytest.mark.parametrize('fmt', ['npz', 'hdf5'])
def test_hdf5_resumes_as_npz(fmt, still, tmp_path):
    _, whole_loop, whole_links = _run_all(still, tmp_path / 'whole', 6)
    path = str(tmp_path / 'snapshot')
    first, _, _ = _run_all(still, tmp_path / 'first', 3)
    save(first, path, fmt)
    _, loop, links = _run_all(still, tmp_path / 'resumed', 6, path, fmt)
    assert loop.summary() == whole_loop.summary()
    assert occurrences(links.summary()) == occurrences(whole_links.summary())


# -- 3: autoload; TimedLoop.summary covers every iteration --------------------

# Chainer's IntervalTrigger of an extension new at the resume warns too.
@pytest.mark.filterwarnings('ignore:The previous value of')
@pytest.mark.parametrize('extension,key,expected', [
    (TimedLoop, 'time/loop/iteration',
     DATA + FORWARD + BACKWARD + OPTIMIZER + SLOW / 2),
    (TimedLinks, 'time/main', FORWARD)])
def test_added_at_an_autoloaded_resume_averages_since_the_resume(
        still, tmp_path, extension, key, expected):
    # The snapshot has none of its state: its figures start at the resume.
    first = make_slow_trainer(still, tmp_path, stop=4)
    first.extend(extensions.snapshot(), trigger=(4, 'iteration'))
    first.extend(extensions.LogReport(trigger=(2, 'iteration')))
    first.run()
    second = make_slow_trainer(still, tmp_path, stop=8)
    second.extend(extensions.snapshot(autoload=True),
                  trigger=(4, 'iteration'))
    second.extend(extension(), trigger=(2, 'iteration'))
    second.extend(extensions.LogReport(trigger=(2, 'iteration')))
    with pytest.warns(RuntimeWarning, match='Timing starts afresh'):
        second.run()
    log = second.get_extension('LogReport').log
    assert [e[key] for e in log if key in e] == [expected, expected]


def test_timed_loop_summary_covers_iterations_after_the_last_report(
        still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=10)
    timed = TimedLoop()
    trainer.extend(timed, trigger=(4, 'iteration'))
    trainer.run()
    summary = timed.summary()
    assert summary['data'] == DATA
    assert summary['forward'] == FORWARD
    assert summary['backward'] == BACKWARD
    assert summary['optimizer'] == OPTIMIZER
    assert summary['extension/slow'] == SLOW / 2  # 5 calls in 10
    assert summary['iteration'] == DATA + FORWARD + BACKWARD + (
        OPTIMIZER + SLOW / 2)


def test_timed_loop_summary_of_a_run_shorter_than_its_trigger(
        still, tmp_path):
    trainer = make_slow_trainer(still, tmp_path, stop=3)
    timed = TimedLoop()
    trainer.extend(timed, trigger=(4, 'iteration'))
    trainer.run()
    summary = timed.summary()
    assert summary['data'] == DATA
    assert summary['optimizer'] == OPTIMIZER
    assert summary['extension/slow'] == pytest.approx(SLOW / 3)


# -- 4: a reused TimedLinks ---------------------------------------------------

def test_reused_timed_links_starts_afresh_in_a_new_trainer(
        still, tmp_path):
    ext = TimedLinks()
    first = make_slow_trainer(still, tmp_path / 'first', stop=6)
    first.extend(ext, trigger=(2, 'iteration'))
    first.run()
    assert occurrences(ext.summary())['/'] == 6
    second = make_slow_trainer(still, tmp_path / 'second', stop=10)
    second.extend(ext, trigger=(2, 'iteration'))
    second.run()
    assert occurrences(ext.summary())['/'] == 10


def test_reused_timed_links_keeps_its_figures_when_resumed(
        still, tmp_path):
    ext = TimedLinks()
    path = str(tmp_path / 'snapshot')
    first = make_slow_trainer(still, tmp_path / 'first', stop=4)
    first.extend(ext, trigger=(2, 'iteration'))
    first.run()
    save(first, path, 'npz')
    resumed = make_slow_trainer(still, tmp_path / 'resumed', stop=6)
    resumed.extend(ext, trigger=(2, 'iteration'))
    load(path, resumed, 'npz')
    resumed.run()
    assert occurrences(ext.summary())['/'] == 6


# -- 5: one rule for arguments ------------------------------------------------

def _show(link, args, kwargs, out):
    pass


# (class, kwargs, {attribute: value as stored}); NumPy in, Python out.
NUMPY_ARGUMENTS = [
    (TimedLoop, {'print_report': numpy.True_}, {'print_report': True}),
    (TimedLinks, {'validation': numpy.True_, 'backward': numpy.False_,
                  'print_report': numpy.bool_(True)},
     {'validation': True, 'backward': False, 'print_report': True}),
    (UnchainVariables, {'always': numpy.True_}, {'always': True}),
    (TimerHook, {'backward': numpy.True_}, {'backward': True}),
    (Timeline, {'iterations': numpy.int64(3), 'warmup': numpy.int32(1),
                'validation': numpy.True_, 'compress': numpy.False_},
     {'iterations': 3, 'warmup': 1, 'validation': True, 'compress': False}),
    (CaptureOutputsHook, {'copy': numpy.True_}, {'copy': True}),
    (NonFiniteHook, {'backward': numpy.False_, 'deferred': numpy.True_},
     {'backward': False, 'deferred': True}),
    (NonFiniteGuard, {'train': numpy.True_, 'eval': numpy.False_},
     {'train': True, 'eval': False}),
    (ActivationStatistics, {'eval': numpy.True_}, {'eval': True}),
    (CaptureOutputs, {'train': numpy.True_, 'copy': numpy.True_},
     {'train': True}),
    (lambda **kw: LinkHookExtension(TimerHook(), **kw),
     {'train': numpy.True_, 'eval': numpy.False_},
     {'train': True, 'eval': False}),
    (lambda **kw: CallbackHook(posthook=_show, **kw),
     {'train': numpy.True_, 'eval': numpy.False_},
     {'own_modes': _checks.Modes(True, False)}),
]


@pytest.mark.parametrize('cls,kwargs,stored', NUMPY_ARGUMENTS)
def test_numpy_scalars_are_taken_as_python_ones(cls, kwargs, stored):
    obj = cls(**kwargs)
    for name, value in stored.items():
        assert getattr(obj, name) == value
        assert type(getattr(obj, name)) is type(value)


FLAGS = [
    (TimedLoop, 'print_report'),
    (TimedLinks, 'validation'),
    (TimedLinks, 'backward'), (UnchainVariables, 'always'),
    (TimerHook, 'backward'), (CaptureOutputsHook, 'copy'),
    (CaptureOutputs, 'copy'), (NonFiniteHook, 'deferred'),
    (NonFiniteGuard, 'backward'), (ActivationStatisticsHook, 'train'),
    (ActivationStatistics, 'eval'), (CallbackHook, 'eval'),
    (Timeline, 'compress'),
]


@pytest.mark.parametrize('cls,arg', FLAGS)
@pytest.mark.parametrize('value,shown', [
    (numpy.int64(1), 'numpy.int64(1)'), ('yes', "'yes'"), (1, '1')])
def test_a_flag_of_another_type_is_a_type_error(cls, arg, value, shown):
    kwargs = {arg: value}
    if cls is CallbackHook:
        kwargs['posthook'] = _show
    message = '`{}({}={})` is not a flag: use True or False'.format(
        cls.__name__, arg, shown)
    with pytest.raises(TypeError, match=re.escape(message)):
        cls(**kwargs)


@pytest.mark.parametrize('kwargs,error,message', [
    ({'iterations': numpy.float64(3.0)}, TypeError,
     '`Timeline(iterations=numpy.float64(3.0))` is not an integer'),
    ({'iterations': True}, TypeError,
     '`Timeline(iterations=True)` is not an integer'),
    ({'warmup': numpy.int64(-1)}, ValueError,
     '`Timeline(warmup=numpy.int64(-1))` is below 0: use an integer of at '
     'least 0.'),
])
def test_timeline_integers(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        Timeline(**kwargs)


def test_checks():
    assert _checks.check_flag('F', 'x', numpy.False_) is False
    assert _checks.check_flag('F', 'x', None, none='both') is None
    assert type(_checks.check_int('F', 'n', numpy.uint8(2), 0)) is int
    with pytest.raises(TypeError, match=re.escape(
            '`F(x=numpy.int8(0))` is not a flag: use True or False (a bool '
            'or numpy.bool_), or None (both).')):
        _checks.check_flag('F', 'x', numpy.int8(0), none='both')
    with pytest.raises(TypeError, match=re.escape('`F(x=None)` is not a')):
        _checks.check_flag('F', 'x', None)
    with pytest.raises(ValueError, match=re.escape('`F(n=numpy.int64(0))`')):
        _checks.check_int('F', 'n', numpy.int64(0), 1)
    with pytest.raises(TypeError, match=re.escape('`F(name=3)` is not a')):
        _checks.check_name('F', 'name', 3)
    with pytest.raises(ValueError, match=re.escape("`F(name='')` is not a")):
        _checks.check_name('F', 'name', '')
    assert _checks.check_modes('F', numpy.True_, False) == (True, False)
    with pytest.raises(ValueError, match='would never fire'):
        _checks.check_modes('F', numpy.False_, False)

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from chainer_hookext.timing import trace

# The example measures the machine's peaks at its start: on a loaded
# machine a link can beat them later, and TimedLinks then warns that it
# raised them (costs/roofline.py).  What these tests check does not depend
# on the machine's load.
pytestmark = pytest.mark.filterwarnings(
    'ignore:TimedLinks.*the peaks are raised:RuntimeWarning')


SCRIPT = pathlib.Path(__file__).parents[2] / 'examples' / 'train_digits.py'
# scikit-learn's digits: 1,797 images, 80% for training, batches of 100.
ITERATIONS_PER_EPOCH = 1437 / 100
LINKS = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2',
         'main/predictor/l3']
LOOP_KEYS = ['time/loop/' + phase for phase in (
    'iteration', 'data', 'forward', 'backward', 'optimizer', 'extensions',
    'extension/validation', 'extension/TimedLinks', 'extension/Timeline',
    'extension/LogReport', 'other')]
# Timeline's one window: the first three iterations of epoch 2.
WINDOW = ['iteration 16', 'iteration 17', 'iteration 18']


def command(out, *args):
    return [sys.executable, str(SCRIPT), '--out', str(out), '--no-progress',
            *args]


def run(out, *args, timeout=120):
    env = dict(os.environ, MPLBACKEND='Agg')
    return subprocess.run(
        command(out, *args), capture_output=True, text=True, env=env,
        timeout=timeout)


def iterations(epochs):
    return -int(-epochs * ITERATIONS_PER_EPOCH // 1)


def read_log(out):
    with open(os.path.join(out, 'log')) as f:
        return json.load(f)


def timeline(out):
    """The example's trace files, by name, as lists of events."""
    return {path.name: trace.read(str(path))
            for path in (out / 'timeline').glob('*.json.gz')}


def windows(files):
    """The names of the window traces among ``files``, not the outliers'.
    """
    return sorted(name for name in files if not name.startswith('outlier_'))


def spans(events, category):
    # One name per span; a span cut around our own work (``args.piece``)
    # counts once.
    return [e['name'] for e in events
            if e['ph'] == 'X' and e['cat'] == category
            and e.get('args', {}).get('piece', 1) == 1]


def time_keys(backward=True):
    keys = []
    for link in LINKS:
        keys += ['time/' + link, 'time/' + link + '/self']
        if backward:
            keys += ['time/' + link + '/backward',
                     'time/' + link + '/backward/self']
    return keys


def memory_expected():
    """LinkMemory's exact bytes for the example's defaults: 64 inputs, 256
    units, 10 classes, batches of 100, float32, Adam."""
    params = {'l1': (64 * 256 + 256) * 4, 'l2': (256 * 256 + 256) * 4,
              'l3': (256 * 10 + 10) * 4}
    expected = {}
    for link, size in params.items():
        name = 'memory/main/predictor/' + link
        expected[name + '/params'] = expected[name + '/grads'] = size
        expected[name + '/optimizer_state'] = 2 * size  # Adam's m and v
    total = sum(params.values())
    for name in ('memory/main', 'memory/main/predictor'):
        expected[name + '/params'] = expected[name + '/grads'] = total
        expected[name + '/optimizer_state'] = 2 * total
    # The two ReLUs keep their outputs (the predictor's own nodes); l3's
    # output is kept as Classifier.y, as softmax_cross_entropy's input.
    expected['memory/main/predictor/activations/self'] = 2 * 100 * 256 * 4
    expected['memory/main/predictor/l3/activations/self'] = 100 * 10 * 4
    expected['memory/main/predictor/l1/activations'] = 0  # fed the batch
    return expected


def test_runs_and_reports(tmp_path):
    out = tmp_path / 'result'
    proc = run(out, '--epoch', '2')
    assert proc.returncode == 0, proc.stderr
    log = read_log(out)
    assert [entry['epoch'] for entry in log] == [1, 2]
    for entry in log:
        for key in time_keys() + ['main/loss', 'validation/main/accuracy']:
            assert key in entry, key
            assert entry[key] >= 0
        assert entry['time/main'] >= entry['time/main/predictor']
        for key in LOOP_KEYS:
            assert entry[key] >= 0, key
        assert entry['time/loop/iteration'] >= entry['time/loop/forward']
    page = (out / 'profile.html').read_text()
    for section in ('summary', 'links', 'functions', 'roofline', 'memory',
                    'loop', 'traces'):
        assert '<h2 id="{}">'.format(section) in page, section
    for name in ('link_time.png', 'loop_time.png', 'timeline.png',
                 'roofline.png', 'memory.png', 'functions.png', 'loss.png',
                 'accuracy.png', 'cg.dot'):
        assert (out / name).stat().st_size > 0, name
    files = timeline(out)
    # The window, and no outlier of the scheduled work (each epoch's end,
    # its plots): an outlier trace, if any, is of an update that another
    # job on the machine slowed, after the 20 iterations of warm-up.
    assert windows(files) == ['iteration_16.json.gz']
    for path in (out / 'timeline').glob('outlier_*'):
        said = trace.read(str(path), other=True)[1]['outlier']
        assert said['part'] == 'update' and said['iteration'] > 20, said
    events = files['iteration_16.json.gz']
    assert spans(events, 'iteration') == WINDOW
    assert spans(events, 'link_forward').count('main/predictor/l1') == 3
    assert 'main/predictor/l1 (backward)' in spans(events, 'link_backward')
    times = json.loads((out / 'link_times.json').read_text())
    assert times['links']['main']['occurrence'] == iterations(2)
    assert times['links']['main/predictor/l1']['flops'] > 0
    l1 = times['roofline']['main/predictor/l1']
    assert l1['forward']['flops'] == times['links']['main/predictor/l1'][
        'flops']
    assert l1['backward']['bound'] in ('compute', 'memory', 'overhead')
    assert 0 < l1['forward']['percent'] <= 100
    assert times['unknown_functions'] == {}
    assert times['functions']['LinearFunction']['occurrence'] == 3 * (
        iterations(2))
    linear = times['links']['main/predictor/l1']
    assert list(linear['functions']) == ['LinearFunction']
    assert linear['rest_time'] + linear['functions']['LinearFunction'][
        'time'] == pytest.approx(linear['self_time'], abs=1e-12)
    assert spans(events, 'function_forward').count('LinearFunction') == 9
    assert 'ReLU (backward)' in spans(events, 'function_backward')
    for entry in log:
        assert entry['flops/main/predictor/l1'] > 0
        assert entry['time/function/LinearFunction'] > 0
        assert entry['flops/function/LinearFunction/backward'] > 0
        for key, value in memory_expected().items():
            assert entry[key] == value, key
        assert entry['memory/main/activations'] == entry[
            'memory/(outside)/activations'] + sum(
                entry['memory/{}/activations/self'.format(link)]
                for link in LINKS)
    memory = json.loads((out / 'link_memory.json').read_text())
    assert memory['main/predictor/l3']['activations'] == 100 * 10 * 4
    assert memory['main']['activations'] == log[-1][
        'memory/main/activations']
    # The per-epoch table and the whole-run tree are printed.
    assert '\x1b' not in proc.stdout  # a pipe: no escape code, ours or not
    assert 'TimedLinks at iteration 15' in proc.stdout
    assert 'Link / Function' in proc.stdout and '(rest)' in proc.stdout
    assert 'LinkName' in proc.stdout and '    l3 ' in proc.stdout
    assert 'TimedLoop at iteration 15' in proc.stdout
    assert 'LinkMemory at iteration 15' in proc.stdout
    assert 'F.forget candidates' in proc.stdout
    assert '  validation ' in proc.stdout


def test_forward_only(tmp_path):
    out = tmp_path / 'result'
    proc = run(out, '--iterations', '3', '--no-backward', '--noplot')
    assert proc.returncode == 0, proc.stderr
    assert not (out / 'link_time.png').exists()
    assert not (out / 'loop_time.png').exists()
    assert os.listdir(out / 'timeline') == []  # stopped within epoch 1
    assert not (out / 'timeline.png').exists()
    times = json.loads((out / 'link_times.json').read_text())
    assert times['links']['main']['occurrence'] == 3
    assert 'roofline' not in times  # FLOPs need backward


@pytest.mark.slow
def test_killed_run_resumes_where_it_stopped(tmp_path):
    out = tmp_path / 'killed'
    env = dict(os.environ, MPLBACKEND='Agg')
    with subprocess.Popen(
            command(out, '--epoch', '1000', '--noplot'),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=env) as proc:
        try:
            deadline = time.monotonic() + 120
            while not list(out.glob('snapshot_iter_*')):
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, 'no snapshot in 120 s'
                time.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    snapshots = sorted(out.glob('snapshot_iter_*'))
    assert snapshots, 'killed before the first snapshot'
    resumed_from = int(snapshots[-1].name.rsplit('_', 1)[1])
    epochs = int(resumed_from / ITERATIONS_PER_EPOCH) + 2

    resumed = run(out, '--epoch', str(epochs), '--noplot')
    assert resumed.returncode == 0, resumed.stderr
    straight = tmp_path / 'straight'
    proc = run(straight, '--epoch', str(epochs), '--noplot')
    assert proc.returncode == 0, proc.stderr

    log, expected = read_log(out), read_log(straight)
    assert [e['iteration'] for e in log] == [e['iteration'] for e in expected]
    assert [e['epoch'] for e in log] == list(range(1, epochs + 1))
    assert [sorted(e) for e in log] == [sorted(e) for e in expected]
    for entry in log:
        assert set(time_keys() + LOOP_KEYS) <= set(entry)

    summary = json.loads((out / 'link_times.json').read_text())['links']
    expected = json.loads((straight / 'link_times.json').read_text())[
        'links']
    assert sorted(summary) == sorted(expected)
    for path in expected:
        assert summary[path]['occurrence'] == expected[path]['occurrence']
    assert summary['main']['occurrence'] == iterations(epochs)

    # One window in each: kept if the killed run wrote it, else written
    # by the resumed run from the snapshot's schedule (beside the outlier
    # traces, which depend on the machine's timing).
    for files in (timeline(out), timeline(straight)):
        assert windows(files) == ['iteration_16.json.gz']
        assert spans(files['iteration_16.json.gz'], 'iteration') == WINDOW


@pytest.mark.parametrize('interrupt', [False, True])
def test_example_leaves_nothing(tmp_path, monkeypatch, user_state, interrupt):
    # The example's own set-up, in this process: after its trainer.run()
    # ends or is interrupted (inside Timeline's window), nothing of the
    # user's or of Chainer's is changed.
    import importlib.util

    import chainer
    from chainer import training

    spec = importlib.util.spec_from_file_location('train_digits', SCRIPT)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    run_trainer = training.Trainer.run
    found = {}

    @training.make_extension(trigger=(17, 'iteration'))
    def ctrl_c(trainer):
        raise KeyboardInterrupt

    def run_and_compare(trainer, *args, **kwargs):
        if interrupt:
            trainer.extend(ctrl_c)
        state = user_state(trainer)
        try:
            return run_trainer(trainer, *args, **kwargs)
        finally:
            found['changes'] = state.changes()
            found['iteration'] = trainer.updater.iteration

    monkeypatch.setattr(training.Trainer, 'run', run_and_compare)
    monkeypatch.setenv('MPLBACKEND', 'Agg')
    argv = ['--out', str(tmp_path), '--iterations', '20', '--noplot',
            '--no-progress']
    with chainer.using_config('train', True):
        if interrupt:
            with pytest.raises(KeyboardInterrupt):
                example.main(argv)
        else:
            assert example.main(argv) == 0
    assert found == {'changes': [], 'iteration': 17 if interrupt else 20}

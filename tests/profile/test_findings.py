"""The findings of a run, on synthetic logs whose answer is known."""

from chainer_hookext.profile import findings
from chainer_hookext.profile import run as run_module


def make_run(log, **profile):
    return run_module.Run('/result', log, profile, [])


NAMES = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']


def test_slowest_links_and_their_share():
    entry = {'time/main/self': 0.1, 'time/main/backward/self': 0.1,
             'time/main/predictor/self': 0.0,
             'time/main/predictor/l1/self': 0.2,
             'time/main/predictor/l1/backward/self': 0.4,
             'time/main/predictor/l2/self': 0.1,
             'time/(outside)/backward': 0.1}
    run = make_run([{'epoch': 1}, entry], links={'names': NAMES})
    found = [f for f in findings.findings(run) if f.topic == 'links']
    assert [round(f.share, 2) for f in found] == [0.6, 0.2, 0.1]
    assert found[0].text.startswith(
        'main/predictor/l1 takes 60% of the model\'s time (600.00ms per '
        'iteration: forward 200.00ms, backward 400.00ms)')


def test_the_heaviest_part_of_the_loop():
    entry = {'time/loop/iteration': 0.3, 'time/loop/data': 0.03,
             'time/loop/forward': 0.06, 'time/loop/backward': 0.09,
             'time/loop/optimizer': 0.02,
             'time/loop/extension/PlotReport': 0.1,
             'time/loop/gc': 0.03}
    run = make_run([entry], config={'trainer_extensions': [
        'PlotReport', 'LogReport']})
    found = [f for f in findings.findings(run, top=10) if f.topic == 'loop']
    assert found[0].text == (
        'PlotReport takes 33% of each iteration (100.00ms of 300.00ms).')
    assert '`backward` takes 30%' in found[1].text
    assert any('garbage collector takes 10%' in f.text for f in found)


def test_memory_holders_and_forget():
    entry = {'memory/main/predictor/l1/activations/self': 3 * 2 ** 20,
             'memory/main/predictor/l2/activations/self': 2 ** 20,
             'memory/main/predictor/forgettable': 2 * 2 ** 20,
             'memory/main/predictor/l1/forgettable': 2 ** 20,
             'memory/main/forgettable': 4 * 2 ** 20}  # the whole model
    run = make_run([entry], links={'names': NAMES})
    found = [f for f in findings.findings(run) if f.topic == 'memory']
    assert found[0].text == ('F.forget around main/predictor would free '
                             '2.00MiB (50% of the activations), its forward '
                             'run again in backward.')
    entry['time/main/predictor'] = 0.003  # what it costs
    found = [f for f in findings.findings(run) if f.topic == 'memory']
    assert found[0].text.endswith('(50% of the activations), for its forward '
                                  'again in backward (3.00ms per '
                                  'iteration).')
    assert found[1].text == ('main/predictor/l1 keeps 3.00MiB for backward '
                             '(75% of the activations).')


def test_far_under_the_roofline():
    point = {'flops': 100, 'percent': 0.5, 'bound': 'memory',
             'intensity': 0.25}
    links = {'names': NAMES, 'links': {
        '/predictor/l1': {'self_time': 0.3, 'backward_self_time': 0.1},
        '/predictor/l2': {'self_time': 0.1, 'backward_self_time': 0.5}},
        'roofline': {'/predictor/l1': {'forward': point, 'backward': dict(
            point, percent=50.0)}, '/predictor/l2': {'forward': None}}}
    found = [f for f in findings.findings(make_run([], links=links))
             if f.topic == 'roofline']
    assert [f.text for f in found] == [
        '/predictor/l1 runs its forward at 0.5% of the peak, memory-bound '
        '(0.25 FLOPs per byte), in 30% of the model\'s time.']


def test_function_types():
    entry = {'time/function/LinearFunction': 0.2,
             'time/function/LinearFunction/backward': 0.4,
             'time/function/ReLU': 0.1, 'time/function/ReLU/backward': 0.3}
    run = make_run([entry], links={'names': NAMES, 'functions': {
        'LinearFunction': {}, 'ReLU': {}}})
    found = [f for f in findings.findings(run) if f.topic == 'functions']
    assert found[0].text.startswith('LinearFunction takes 60% of the time in '
                                    'function nodes')


def test_nothing_measured_nothing_found():
    assert findings.findings(make_run([{'main/loss': 1.0}])) == []

"""The findings of a run, on synthetic logs whose answer is known."""

import chainer
import pytest

import chainer_hookext
from chainer_hookext.profile import findings
from chainer_hookext.profile import run as run_module


def make_run(log, **profile):
    return run_module.Run('/result', log, profile, [])


NAMES = ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l2']
EXTENSIONS = ['Evaluator', 'LogReport', 'ProfileReport']


def loop_entry(iteration, **seconds):
    """A TimedLoop report of 0.5 s iterations at ``iteration``."""
    entry = {'iteration': iteration, 'time/loop/iteration': 0.5}
    entry.update({f'time/loop/{k}': v for k, v in seconds.items()})
    return entry


def loop_run(*entries, iterator='SerialIterator'):
    return make_run(list(entries), config={
        'trainer_extensions': EXTENSIONS, 'iterator': iterator,
        'triggers': {'Evaluator': [1, 'epoch'], 'LogReport': [1, 'epoch'],
                     'ProfileReport': None}})


def test_an_extension_and_the_trigger_to_give_it():
    # Evaluator: 12% of the training, over two reports of 10 iterations
    # (0.12 s of 0.5 s, then 0.0 and 0.24 s); LogReport under 1%.
    run = loop_run(loop_entry(10, **{'extension/Evaluator': 0.06}),
                   loop_entry(20, **{'extension/Evaluator': 0.06,
                                     'extension/LogReport': 0.001}))
    found, = findings.findings(run)
    assert found.rule == 'trigger'
    assert found.number == pytest.approx(0.12)
    assert found.saving == pytest.approx(0.096)
    assert found.of == findings.TIME
    assert found.text == (
        "Evaluator takes 12.0% of the training; trigger=(5, 'epoch') would "
        "bring it to 2.4%, saving 9.6%.")


def test_a_trigger_that_is_no_interval():
    run = loop_run(loop_entry(10, **{'extension/ProfileReport': 0.41}))
    found, = findings.findings(run)
    assert found.action == ('a trigger 50 times sparser would bring it to '
                            '1.6%, saving 80.4%')


def test_slow_data_gc_ranked_by_saving():
    run = loop_run(loop_entry(10, data=0.1, gc=0.02,
                              **{'extension/Evaluator': 0.015}))
    found = findings.findings(run)
    assert [f.rule for f in found] == ['data', 'gc', 'trigger']
    assert [f.saving for f in found] == sorted(
        (f.saving for f in found), reverse=True)
    assert found[0].text == (
        'Loading the data (`data`) takes 20.0% of the training; '
        'MultiprocessIterator (MultithreadIterator where the dataset cannot '
        'be pickled) would load the next batches while the model trains, '
        'saving up to 20.0%.')
    assert 'gc.freeze() after set-up' in found[1].action
    assert found[1].number == pytest.approx(0.04)
    data, = [f for f in findings.findings(loop_run(
        loop_entry(10, data=0.1), iterator='MultiprocessIterator'))]
    assert data.action.startswith('more workers (MultiprocessIterator\'s '
                                  'n_processes= or n_threads=)')


def test_nothing_under_one_percent():
    # data under its 5% threshold, gc under 1%, LogReport under 2.5%.
    run = loop_run(loop_entry(10, data=0.02, gc=0.004,
                              **{'extension/LogReport': 0.01}))
    assert findings.findings(run) == []


def test_forget_only_where_it_frees_a_tenth():
    entry = {'memory/main/predictor/l1/activations/self': 19 * 2 ** 20,
             'memory/main/predictor/l2/activations/self': 1 * 2 ** 20,
             'memory/main/predictor/forgettable': 3 * 2 ** 19,
             'memory/main/predictor/l1/forgettable': 1 * 2 ** 20,
             'memory/main/predictor/l2/forgettable': 1 * 2 ** 19,
             'memory/main/forgettable': 20 * 2 ** 20}  # the whole model
    run = make_run([entry], links={'names': NAMES})
    assert findings.findings(run) == []  # predictor frees 7.5%
    entry['memory/main/predictor/forgettable'] = 4 * 2 ** 20
    entry['time/main/predictor'] = 0.003
    entry.update(loop_entry(2))
    found, = findings.findings(make_run([entry], links={'names': NAMES}))
    assert found.of == findings.ACTIVATIONS
    assert found.number == pytest.approx(0.2)
    assert found.text == (
        'main/predictor keeps 4.00MiB for backward that F.forget would free '
        '(20.0% of the activations); F.forget around it would free them for '
        'its forward again in backward (3.00ms, 0.6% of each iteration).')


def test_overhead_bound_links_and_a_larger_batch():
    overhead = {'flops': 100, 'percent': 0.5, 'intensity': 0.25,
                'bound': findings.OVERHEAD}
    links = {'names': NAMES, 'links': {
        '/predictor/l1': {'self_time': 2.0, 'backward_self_time': 1.0},
        '/predictor/l2': {'self_time': 1.0, 'backward_self_time': 4.0}},
        'roofline': {'/predictor/l1': {'forward': overhead, 'backward': dict(
            overhead, bound='memory')}, '/predictor/l2': {'forward': None}}}
    run = run_module.Run('/result', [loop_entry(10)], {
        'links': links, 'config': {'iteration': 10, 'batch_size': 100}}, [])
    found, = findings.findings(run)
    # l1's forward: 2 s over 10 iterations of 0.5 s.
    assert found.number == pytest.approx(0.4)
    assert found.saving == pytest.approx(0.2)
    assert found.text == (
        '1 link is overhead-bound (/predictor/l1), 40.0% of the training; '
        'batch_size=200 would spread their overhead over twice the samples, '
        'saving up to 20.0% per sample.')


def test_nothing_measured_nothing_found():
    assert findings.findings(make_run([{'main/loss': 1.0}])) == []


def test_profile_json_has_the_iterator_and_the_triggers(trainer_factory):
    trainer = trainer_factory(stop=(1, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(), trigger=(3, 'epoch'))
    trainer.extend(lambda trainer: None, name='once', trigger=(
        chainer.training.triggers.ManualScheduleTrigger([1], 'iteration')))
    config = run_module.collect(trainer)['config']
    assert config['iterator'] == 'SerialIterator'
    assert config['triggers'] == {'TimedLoop': [3, 'epoch'], 'once': None}


def test_a_sparser_trigger_fits_the_run():
    # Evaluator at 12% every epoch of a 4-epoch run: (5, 'epoch') would
    # never run it; once, at the end of the run, is what fits.
    run = loop_run(loop_entry(10, **{'extension/Evaluator': 0.06}),
                   loop_entry(20, **{'extension/Evaluator': 0.06}))
    run.profile['config']['epoch'] = 4
    found, = findings.findings(run)
    assert found.text == (
        "Evaluator takes 12.0% of the training; trigger=(4, 'epoch'), once "
        "in this run of 4 epochs, would bring it to 3.0%, saving 9.0%.")
    run.profile['config']['epoch'] = 1  # nothing sparser fits
    assert findings.findings(run) == []


def test_overhead_bound_links_named_largest_first():
    overhead = {'flops': 100, 'percent': 0.5, 'intensity': 0.25,
                'bound': findings.OVERHEAD}
    times = {'main': 0.1, 'main/predictor': 0.4, 'main/predictor/l1': 0.3,
             'main/predictor/l2': 0.2}
    links = {'names': NAMES, 'links': {
        name: {'self_time': t, 'backward_self_time': 0.0}
        for name, t in times.items()},
        'roofline': {name: {'forward': overhead} for name in times}}
    run = run_module.Run('/result', [loop_entry(10)], {
        'links': links, 'config': {'iteration': 10, 'batch_size': 100}}, [])
    found, = findings.findings(run)
    assert found.what == ('4 links are overhead-bound (main/predictor, '
                          'main/predictor/l1, main/predictor/l2, ...), 20.0% '
                          'of the training')

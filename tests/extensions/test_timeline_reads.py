"""One reading of each moment: a trace's phases and link spans come from
the same clock reads, and its link spans are what TimedLinks charges.

The ``clock`` fixture makes every clock read a new tick: two readers of
one moment would show as spans a tick apart, overlapping their phase.
"""

import chainer
import chainer.functions as F
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from tests.conftest import hook_keys
from tests.conftest import make_trainer
from tests.extensions.test_timeline import assert_nested_per_thread
from tests.extensions.test_timeline import parent_of
from tests.extensions.test_timeline import run_with_timeline
from tests.extensions.test_timeline import spans
from tests.timing.test_marks import Accumulating


class GradInForward(training.updaters.StandardUpdater):
    # A gradient penalty: chainer.grad inside the forward, double backprop.
    def update_core(self):
        optimizer = self.get_optimizer('main')
        model = optimizer.target
        x, t = self.converter(self.get_iterator('main').next(), None)
        x = chainer.Variable(x)
        y = model.predictor(x)
        g, = chainer.grad([F.sum(y * y)], [x], enable_double_backprop=True)
        loss = F.softmax_cross_entropy(y, t) + 1e-3 * F.sum(g * g)
        model.cleargrads()
        loss.backward()
        optimizer.update()


class Forgetting(training.updaters.StandardUpdater):
    # F.forget around the predictor: its forward again in backward.
    def update_core(self):
        optimizer = self.get_optimizer('main')
        model = optimizer.target
        x, t = self.converter(self.get_iterator('main').next(), None)
        y = F.forget(model.predictor, x)
        loss = F.softmax_cross_entropy(y, t)
        model.cleargrads()
        loss.backward()
        optimizer.update()


UPDATERS = {'standard': training.updaters.StandardUpdater,
            'accumulating': Accumulating, 'grad_in_forward': GradInForward,
            'forgetting': Forgetting}


def trainer_with(updater, tmp_path):
    trainer = make_trainer(tmp_path, stop=(6, 'iteration'))
    old = trainer.updater
    trainer.updater = updater(old.get_iterator('main'),
                              old.get_optimizer('main'))
    return trainer


@pytest.mark.parametrize('updater', sorted(UPDATERS))
@pytest.mark.parametrize('timed_links', [None, 'every link', 'predictor'])
def test_phases_and_spans_nest_without_fitting(clock, tmp_path, updater,
                                               timed_links):
    trainer = trainer_with(UPDATERS[updater], tmp_path)
    if timed_links is not None:  # its own reads, or the window's timer
        links = None if timed_links == 'every link' else [
            trainer.updater.get_optimizer('main').target.predictor]
        trainer.extend(TimedLinks(links=links), trigger=(2, 'iteration'))
    trainer.extend(TimedLoop(), trigger=(2, 'iteration'))
    _, files = run_with_timeline(trainer, iterations=2)
    events = [e for name in files for e in files[name]]
    assert_nested_per_thread(events)
    assert not [e for e in spans(events) if 'fitted_ns' in e.get('args', {})]
    phase_spans = spans(events, 'phase')
    for e in spans(events, 'link_forward') + spans(events, 'link_backward'):
        assert parent_of(e, phase_spans) is not None, e


def test_link_spans_are_what_timed_links_charges(clock, tmp_path):
    trainer = make_trainer(tmp_path, stop=(4, 'iteration'))
    timed = TimedLinks()
    trainer.extend(timed, trigger=(1, 'iteration'))
    trainer.extend(extensions.LogReport(trigger=(1, 'iteration')))
    timeline, files = run_with_timeline(trainer, iterations=1)
    log = trainer.get_extension('LogReport').log
    assert timeline._timer.total_calls() == 0  # TimedLinks' timer served
    for name, events in files.items():
        number = int(name.split('_')[1].split('.')[0])
        [entry] = [e for e in log if e['iteration'] == number]
        for link in ('main', 'main/predictor', 'main/predictor/l1'):
            forward = [e for e in spans(events, 'link_forward')
                       if e['name'] == link]
            assert forward
            ns = sum(round(e['dur'] * 1000) for e in forward)
            assert abs(ns - entry['time/' + link] * 1e9) <= len(forward)
            backward = sum(e['args']['steps_ns'] for e in spans(
                events, 'link_backward') if e['args']['link'] == link)
            assert abs(backward - entry['time/{}/backward/self'.format(
                link)] * 1e9) <= len(forward) + 1


def test_a_window_of_its_own_takes_the_phases_reads(clock, tmp_path):
    # TimedLinks times the predictor only: the window has a timer of its
    # own, and the phases take its reads while it records, none after.
    trainer = make_trainer(tmp_path, stop=(6, 'iteration'))
    model = trainer.updater.get_optimizer('main').target
    trainer.extend(TimedLinks(links=[model.predictor]),
                   trigger=(2, 'iteration'))
    timeline, files = run_with_timeline(trainer, iterations=2)
    assert timeline._timer.total_calls() > 0
    events = [e for name in files for e in files[name]]
    assert_nested_per_thread(events)
    assert not [e for e in spans(events) if 'fitted_ns' in e.get('args', {})]


def test_outliers_record_timed_links_timer(clock, tmp_path):
    # Every iteration recorded, from TimedLinks' reads: no second timer.
    trainer = make_trainer(tmp_path, stop=(6, 'iteration'))
    trainer.extend(TimedLinks(), trigger=(2, 'iteration'))
    seen = []

    @training.make_extension(trigger=(1, 'iteration'))
    def look(trainer):
        seen.append(hook_keys(chainer._get_link_hooks()))
    trainer.extend(look)
    timeline, _ = run_with_timeline(
        trainer, iterations=2, outliers=True)
    assert seen == [['chainer_hookext.TimedLinks']] * 6
    assert timeline._timer.total_calls() == 0

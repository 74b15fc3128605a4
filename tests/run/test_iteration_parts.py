"""Which part of an iteration runs (issue 32): ``TrainingLoop.parts``.

Every test drives a real ``Trainer``: the update and an ``Evaluator``'s
call are told apart from the rest, the entries' triggers are their own
again on every way out of an iteration, and nothing is stood in for while
nobody listens.
"""

import chainer
import pytest
from chainer import training
from chainer.training import extensions

from chainer_hookext import TimedLinks
from chainer_hookext import TimedLoop
from chainer_hookext.run import training_loop
from tests.conftest import Boom
from tests.conftest import MLP
from tests.conftest import make_dataset
from tests.conftest import raise_boom
from tests.run.test_training_loop import model_of
from tests.run.test_training_loop import ours


class Watcher(training.Extension):
    """Installs a loop on the trainer, listens to its update (unless
    ``listen=False``) and keeps what its flags said, seen from the update
    and from the extensions; ends the loop as ``LinkHookExtension``
    does."""

    priority = -1000

    def __init__(self, listen=True):
        self.seen = []
        self.changes = []
        self.listen = listen
        self.loop = None

    def initialize(self, trainer):
        self.loop = training_loop.TrainingLoop.install(
            trainer, self.enter, self.end)
        if self.listen:
            self.loop.parts.add_callback(self.changes.append)

    def enter(self):
        self.look('enter')

    def end(self):
        self.look('end')

    def look(self, where):
        parts = self.loop.parts
        self.seen.append((where, parts.in_update, parts.evaluator))

    def __call__(self, trainer):
        self.look('watcher')

    def on_error(self, trainer, exc, tb):
        self.loop.end()

    def finalize(self):
        self.loop.end()


class WatchedEvaluator(extensions.Evaluator):
    def __init__(self, watcher, model):
        iterator = chainer.iterators.SerialIterator(
            make_dataset(8), 8, repeat=False)
        super().__init__(iterator, model)
        self.watcher = watcher

    def evaluate(self):
        self.watcher.look('evaluator')
        return super().evaluate()


def watched_trainer(tmp_path, update=None, listen=True):
    """A trainer whose update tells the watcher, then runs ``update``."""
    watcher = Watcher(listen)

    class Updater(training.updaters.StandardUpdater):
        def update_core(self):
            watcher.look('update')
            if update is not None:
                update(self)
            super().update_core()

    model = chainer.links.Classifier(MLP())
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    it = chainer.iterators.SerialIterator(make_dataset(), 8)
    trainer = training.Trainer(Updater(it, optimizer), (2, 'iteration'),
                               out=str(tmp_path))
    trainer.extend(watcher, trigger=(1, 'iteration'))
    return trainer, watcher


def look(watcher, name, priority):
    @training.make_extension(trigger=(1, 'iteration'), priority=priority)
    def look(trainer):
        watcher.look(name)
    return look


def test_flags_tell_the_update_and_the_evaluator(tmp_path):
    trainer, watcher = watched_trainer(tmp_path)
    evaluator = WatchedEvaluator(watcher, model_of(trainer))
    trainer.extend(look(watcher, 'first', 300))
    trainer.extend(evaluator, trigger=(1, 'iteration'), priority=200)
    trainer.extend(look(watcher, 'after', 100))
    entries = dict(trainer._extensions)
    before = {name: entry.trigger for name, entry in entries.items()}
    trainer.run()
    iteration = [('update', True, None), ('first', False, None),
                 ('evaluator', False, evaluator), ('after', False, None),
                 ('watcher', False, None)]
    assert watcher.seen == [('enter', False, None)] + iteration * 2 + [
        ('end', False, None)]
    assert watcher.changes == [True, False] * 2
    assert {name: e.trigger for name, e in entries.items()} == before


def test_an_evaluator_not_called_is_not_running(tmp_path):
    trainer, watcher = watched_trainer(tmp_path)
    trainer.extend(WatchedEvaluator(watcher, model_of(trainer)),
                   trigger=(5, 'iteration'), priority=200)
    trainer.run()
    assert watcher.seen[1:3] == [('update', True, None),
                                 ('watcher', False, None)]


def test_the_last_extension_an_evaluator(tmp_path):
    # No entry after it: the iteration's end ends its call.
    trainer, watcher = watched_trainer(tmp_path)
    evaluator = WatchedEvaluator(watcher, model_of(trainer))
    trainer.extend(evaluator, trigger=(1, 'iteration'), priority=-2000)
    trainer.run()
    assert watcher.seen[1:4] == [('update', True, None),
                                 ('watcher', False, None),
                                 ('evaluator', False, evaluator)]
    assert watcher.seen[4] == ('update', True, None)


def test_triggers_left_alone_when_nobody_listens(tmp_path):
    seen = []

    def trigger_of_first(updater):
        seen.append(trainer._extensions['first'].trigger)

    trainer, watcher = watched_trainer(
        tmp_path, update=trigger_of_first, listen=False)
    trainer.extend(look(watcher, 'first', 300), name='first')
    trigger = trainer._extensions['first'].trigger
    trainer.run()
    assert seen == [trigger, trigger]
    # Without a listener the flags are not kept.
    assert ('first', True, None) in watcher.seen


def interrupt(*args):
    raise KeyboardInterrupt


@pytest.mark.parametrize('update, exc', [(raise_boom, Boom),
                                         (interrupt, KeyboardInterrupt)])
def test_triggers_put_back_when_the_update_raises(tmp_path, user_state,
                                                  update, exc):
    # Every way out of the update leaves the iteration's scope: each
    # entry's trigger is its own again before any on_error (TimedLoop's
    # wrapped triggers are put back then).
    trainer, watcher = watched_trainer(tmp_path, update=update)
    trainer.extend(TimedLoop(), trigger=(1, 'iteration'))
    trainer.extend(TimedLinks(), trigger=(1, 'iteration'))
    state = user_state(trainer)
    with pytest.raises(exc):
        trainer.run(show_loop_exception_msg=False)
    assert state.changes() == []
    assert watcher.seen == [('enter', False, None), ('update', True, None),
                            ('end', False, None)]
    assert ours() == []


def test_a_scope_inside_the_update_does_not_end_it(tmp_path):
    def scope(updater):
        with trainer.reporter.scope({}):
            pass
        watcher.look('after')

    trainer, watcher = watched_trainer(tmp_path, update=scope)
    trainer.run()
    assert watcher.seen[1:3] == [('update', True, None),
                                 ('after', True, None)]


def test_update_callback_removed(tmp_path):
    trainer, watcher = watched_trainer(tmp_path)

    @training.make_extension(trigger=(1, 'iteration'))
    def stop_listening(trainer):
        watcher.loop.parts.remove_callback(watcher.changes.append)
        watcher.loop.parts.remove_callback(watcher.changes.append)  # again

    trainer.extend(stop_listening)
    trainer.run()
    assert watcher.changes == [True, False]

"""The trainer extension writing the run's profile page (docs/profile.md).
"""

import collections
import os
import sys
import typing
import warnings

import chainer
from chainer.training import extension
from chainer.training import extensions

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext.profile import page
from chainer_hookext.profile import run as run_module
from chainer_hookext.report import console
from chainer_hookext.report import gather
from chainer_hookext.run import training_loop
from chainer_hookext.timing import clock

_Drawn = collections.namedtuple('_Drawn', ('iteration', 'entries', 'traces'))


class ProfileReport(extension.Extension):
    """Trainer extension writing the run's profile page, ``profile.html``.

    At its trigger (within :attr:`max_share` of the training's time) and
    when training ends it writes ``<trainer.out>/profile.html`` and
    ``profile.json`` (docs/profile.md).

    Args:
        filename (str): The page's file name in ``trainer.out``.
        comm (chainermn.CommunicatorBase): Under ChainerMN, only rank 0
            writes.

    .. admonition:: Example

        >>> from chainer_hookext import ProfileReport
        >>> trainer.extend(ProfileReport())
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_READER - 1
    default_name = 'ProfileReport'
    #: The most of the training's time the pages drawn at the trigger take.
    max_share: float = 0.03
    #: The seconds a first page is expected to take.
    first_draw_seconds: float = 2.0

    def __init__(self, filename: str = page.PAGE_FILE,
                 comm: typing.Any = None) -> None:
        if not isinstance(filename, str) or not filename or (
                filename != filename.strip()):
            raise TypeError(
                f'`ProfileReport(filename={filename!r})` is not a file '
                "name: give one such as 'profile.html'.")
        if comm is not None:
            gather.check_comm('ProfileReport', comm)
        self.filename = filename
        self.comm = comm
        self._trainer = None
        self._failed = False
        self._started = None  # the run's start, for the pages' share
        self._spent = 0.0  # the seconds of the pages drawn at the trigger
        self._last = None  # the last page's seconds
        self._told = False  # a skip was said
        self._drawn = None  # of the last page
        self._interrupted = False  # a Ctrl-C stopped a drawing
        self._said = False
        self._loop = None
        self.written = None  # the page's path

    def initialize(self, trainer: chainer.training.Trainer) -> None:
        _checks.check_one_per_trainer(
            trainer, self, 'write the same page', 'use one ProfileReport')
        run_module.check_page_name(trainer, self)
        if not any(isinstance(entry.extension, extensions.LogReport)
                   for entry in _chainer.extension_entries(trainer).values()):
            warnings.warn(
                'ProfileReport: the trainer has no LogReport, whose log the '
                'page is drawn from; extend it with '
                'chainer.training.extensions.LogReport().', RuntimeWarning)
        self._trainer = trainer
        self._failed = False
        self._started, self._spent, self._last = clock.now(), 0.0, None
        self._drawn = None
        self._interrupted = self._said = self._told = False
        self._forget_loop()
        # Drawn when the loop ends, before any finalize (one may raise).
        self._loop = training_loop.TrainingLoop.install(
            trainer, self._loop_started, self._loop_ended)

    def _loop_started(self):
        pass  # drawn at the trigger and at the loop's end

    def _loop_ended(self):
        if self._trainer is not None:
            self._draw_at_end(self._trainer)

    def _forget_loop(self):
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.discard(self._loop_started)

    def __call__(self, trainer: chainer.training.Trainer) -> None:
        if self.comm is not None and self.comm.rank != 0:
            return
        if self._started is None:  # called outside a run
            self._started = clock.now()
        start = clock.now()
        # Whether a page as long as the last (or the first's) stays in share.
        last = self.first_draw_seconds if self._last is None else self._last
        if self._spent + last > self.max_share * (start - self._started):
            if not self._told:
                self._told = True
                console.write([
                    f'ProfileReport: skips drawing while it would pass '
                    f'{self.max_share:.0%} of the training\'s time; draws '
                    f'when training ends.'], sys.stderr)
            return
        if self._write(trainer):
            self._last = clock.now() - start
            self._spent += self._last

    def on_error(self, trainer: chainer.training.Trainer,
                 exc: BaseException, tb: typing.Any) -> None:
        self._forget_loop()

    def finalize(self) -> None:
        self._forget_loop()
        trainer, self._trainer = self._trainer, None
        if trainer is not None:
            self._draw_at_end(trainer)

    def _draw_at_end(self, trainer):
        if self.comm is not None and self.comm.rank != 0:
            return
        try:
            if not self._interrupted:
                self._write(trainer)
        finally:
            if self._interrupted:  # now or at a trigger
                self._say_left(trainer)

    def _write(self, trainer):
        # Whether a page was drawn; raises only on Ctrl-C.
        try:
            run = run_module.from_trainer(trainer)
            drawn = _Drawn(trainer.updater.iteration, len(run.log),
                           tuple(run.traces))
            if drawn == self._drawn:
                return False
            run_module.write_profile(run)
            self.written = page.write(
                run, os.path.join(trainer.out, self.filename))
            self._drawn = drawn
        except Exception as e:  # a page is never worth the training
            if not self._failed:
                self._failed = True
                warnings.warn(f'ProfileReport: the page could not be written '
                              f'({type(e).__name__}: {e}); training goes on.',
                              RuntimeWarning)
        except KeyboardInterrupt as e:  # without matplotlib's frames
            self._interrupted = True
            raise e.with_traceback(None)
        return True

    def _say_left(self, trainer):
        # After a Ctrl-C while drawing: the figures saved, one line.
        if self._said:
            return
        self._said = True
        try:
            run_module.write_profile(run_module.from_trainer(trainer))
        except Exception:  # the line below says what to do
            pass
        if self._drawn is not None:
            kept = (f'{self.filename} left as it was (iteration '
                    f'{self._drawn.iteration})')
        elif os.path.exists(os.path.join(trainer.out, self.filename)):
            kept = f'{self.filename} left as it was (an earlier run\'s)'
        else:
            kept = f'no {self.filename} written'
        console.write([
            f'ProfileReport: Ctrl-C while drawing: {kept}; redraw: '
            f'python -m chainer_hookext report {trainer.out}'], sys.stderr)

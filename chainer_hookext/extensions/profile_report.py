import os
import warnings

from chainer.training import extension
from chainer.training import extensions

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext.profile import page
from chainer_hookext.profile import run as run_module
from chainer_hookext.report import gather


class ProfileReport(extension.Extension):
    """Trainer extension writing the run's profile page, ``profile.html``.

    In the spirit of Chainer's ``PlotReport``: at its trigger (each epoch
    by default) and when training ends, on every way out (an exception or
    Ctrl-C included), it writes ``<trainer.out>/profile.html`` and the
    figures behind it, ``profile.json``, each whole or not at all.  The
    page is self-contained (pictures embedded, nothing from the network,
    no script): it opens offline.  Its sections are those of the
    extensions of this package in the trainer: a summary of the findings
    that matter most, each with its number (the slowest links and their
    share, links far under the roofline, the biggest memory holders and
    the ``F.forget`` candidates, the loop's heaviest phase or extension,
    the costliest function type); time per link per epoch; the function
    types; the roofline; memory per link; the loop's phases; the latest
    ``Timeline`` files and how to open them.

    It reads the ``LogReport``'s log (extend the trainer with one, with
    the same trigger or a finer one) and the other extensions' figures;
    it runs after them (``PRIORITY_READER - 1``: after ``LogReport`` and
    ``PlotReport`` of the same trigger).  ``python -m chainer_hookext
    report RESULT_DIR`` rebuilds the page from the files.  The pictures
    need matplotlib (``pip install chainer-hookext[plot]``); without it the
    page says so in their place.

    Args:
        filename (str): The page's file name in ``trainer.out``.
        comm (chainermn.CommunicatorBase): Under ChainerMN, only rank 0
            writes (the figures gathered by the other extensions' ``comm=``
            are in its log).

    .. admonition:: Example

        >>> from chainer_hookext import ProfileReport
        >>> trainer.extend(ProfileReport())
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_READER - 1
    default_name = 'ProfileReport'

    def __init__(self, filename=page.PAGE_FILE, comm=None):
        if not isinstance(filename, str) or not filename or (
                filename != filename.strip()):
            raise TypeError(
                '`ProfileReport(filename={!r})` is not a file name: give '
                'one such as \'profile.html\'.'.format(filename))
        if comm is not None:
            gather.check_comm('ProfileReport', comm)
        self.filename = filename
        self.comm = comm
        self._trainer = None
        self._failed = False
        #: The path of the page, once written.
        self.written = None

    def initialize(self, trainer):
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

    def __call__(self, trainer):
        self._write(trainer)

    def finalize(self):
        trainer, self._trainer = self._trainer, None
        if trainer is not None:
            self._write(trainer)

    def _write(self, trainer):
        # Never raises: a page that cannot be written is warned about
        # once, and training goes on.
        if self.comm is not None and self.comm.rank != 0:
            return
        try:
            run = run_module.from_trainer(trainer)
            run_module.write_profile(run)
            self.written = page.write(
                run, os.path.join(trainer.out, self.filename))
        except Exception as e:  # a page is never worth the training
            if not self._failed:
                self._failed = True
                warnings.warn('ProfileReport: the page could not be written '
                              '({}: {}); training goes on.'.format(
                                  type(e).__name__, e), RuntimeWarning)

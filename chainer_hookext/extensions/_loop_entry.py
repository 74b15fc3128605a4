"""Run a callback when a trainer enters its guarded training loop.

``Trainer.run`` calls every extension's ``initialize`` *outside* its
``try``/``finally``: when a later extension's ``initialize`` raises, or an
extension called before training raises, no ``finalize`` or ``on_error``
runs.  A global link hook registered in ``initialize`` would then stay
registered in the thread for good.

``Trainer.run`` binds ``update = self.updater.update`` after the
initializers and calls it first inside the ``try``.  :class:`LoopEntry` is put
over the updater's ``update`` as an instance attribute; on its first call from
that trainer's ``run`` it takes itself off the updater and runs the callback,
so whatever the callback acquires is released by ``finalize`` on every way
out.  It then forwards each call to the original ``update`` (one Python call
per iteration).
"""

import sys


_MISSING = object()


class LoopEntry(object):
    """Stands in for ``trainer.updater.update`` until the loop starts.

    Use :meth:`install`; one object serves every callback of a trainer.
    """

    def __init__(self, trainer):
        self._trainer = trainer
        self._updater = trainer.updater
        self._callbacks = []
        self._saved = self._updater.__dict__.get('update', _MISSING)
        self._update = self._updater.update
        self._installed = True
        self._updater.update = self

    @property
    def trainer(self):
        """The trainer whose loop entry this object waits for."""
        return self._trainer

    @classmethod
    def install(cls, trainer, callback):
        """Arranges for ``callback()`` to run when ``trainer`` enters its loop.

        Args:
            trainer (~chainer.training.Trainer): The trainer to watch.
            callback (callable): Called with no argument when
                ``trainer.run`` first calls ``update``.

        Returns:
            LoopEntry: The object to pass ``callback`` to :meth:`discard`.
        """
        entry = trainer.updater.__dict__.get('update')
        if not (isinstance(entry, cls) and entry._trainer is trainer
                and entry._installed):
            entry = cls(trainer)
        if callback not in entry._callbacks:
            entry._callbacks.append(callback)
        return entry

    def discard(self, callback):
        """Forgets ``callback``; takes the entry off when none is left."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)
        if not self._callbacks:
            self._remove()

    def __call__(self, *args, **kwargs):
        if self._installed:
            callbacks = self._callbacks
            self._callbacks = []
            self._remove()
            if sys._getframe(1).f_locals.get('self') is self._trainer:
                for callback in callbacks:
                    callback()
        return self._update(*args, **kwargs)

    def _remove(self):
        if not self._installed:
            return
        self._installed = False
        updater = self._updater
        if updater.__dict__.get('update') is self:
            if self._saved is _MISSING:
                del updater.__dict__['update']
            else:
                updater.update = self._saved

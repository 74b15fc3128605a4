"""Where each phase of an iteration starts and ends.

:func:`install` puts thin wrappers, as instance attributes, on the objects
the trainer's loop goes through, each telling a
:class:`~.phases.PhaseClock` when its phase starts and ends:

========================================  ==================================
wrapped                                   phase
========================================  ==================================
each iterator's ``next``, the updater's   ``data``
``converter``
each optimizer target's ``forward``, the  ``forward``
loss function given to ``update``
``chainer.Variable.backward``,            ``backward`` (training thread
``chainer.grad``                          only)
each optimizer's ``update``               ``optimizer`` (minus the above)
the communicator's                        ``allreduce`` (ChainerMN's
``multi_node_mean_grad``                  multi-node optimizer)
each extension's trigger                  ``extension/<name>``: its trigger
                                          and call
========================================  ==================================

The update's phases count only while the update runs
(:attr:`~.phases.PhaseClock.in_update`), so an ``Evaluator``'s forward is
its extension's time.  What no wrapper sees (a custom updater's own work)
stays in ``other``.  :meth:`Patches.restore` takes every wrapper off again,
each only if it is still the attribute's value.
"""

import threading

import chainer
from chainer import dataset

from chainer_hookext.extensions._loop import phases


_MISSING = object()


class Patches(object):
    """Attributes set for the run, and how to restore them."""

    def __init__(self):
        self._done = []  # (object, name, saved value, wrapper)

    def set(self, obj, name, wrapper):
        """Sets ``obj.name = wrapper`` (in its ``__dict__``; a class's or a
        module's attribute with ``setattr``)."""
        saved = vars(obj).get(name, _MISSING)
        if isinstance(obj, type):  # a class's dict is read-only
            setattr(obj, name, wrapper)
        else:  # past a __setattr__ of its own (ChainerMN's optimizer)
            vars(obj)[name] = wrapper
        self._done.append((obj, name, saved, wrapper))

    def restore(self):
        """Restores every attribute set, last first; safe to call again."""
        done, self._done = self._done, []
        for obj, name, saved, wrapper in reversed(done):
            if vars(obj).get(name) is not wrapper:
                continue  # replaced since: not ours to restore
            if isinstance(obj, type):
                if saved is _MISSING:
                    delattr(obj, name)
                else:
                    setattr(obj, name, saved)
            elif saved is _MISSING:
                del vars(obj)[name]
            else:
                vars(obj)[name] = saved


def timed(clock, function, phase, thread=None):
    """Returns ``function`` charging its calls to ``phase`` in the update.

    With ``thread``, calls from other threads pass through (for functions
    of the whole process, such as ``chainer.Variable.backward``).
    """
    def call(*args, **kwargs):
        if not clock.in_update or (
                thread is not None and threading.get_ident() != thread):
            return function(*args, **kwargs)
        clock.enter(phase)
        try:
            return function(*args, **kwargs)
        finally:
            clock.leave()
    return call


class _TimedConverter(dataset.Converter):
    # A new-style converter stays one: Chainer passes it a Device.

    def __init__(self, clock, converter):
        self.clock = clock
        self.converter = converter

    def __call__(self, batch, device):
        clock = self.clock
        if not clock.in_update:
            return self.converter(batch, device)
        clock.enter(phases.DATA)
        try:
            return self.converter(batch, device)
        finally:
            clock.leave()


class TimedTrigger(object):
    """An extension's trigger that starts the extension's phase.

    Forwards everything else (``serialize``, ``finished`` ...) to the
    trigger, so snapshots are unchanged.
    """

    def __init__(self, clock, trigger, phase):
        self.clock = clock
        self.trigger = trigger
        self.phase = phase

    def __call__(self, trainer):
        clock = self.clock
        clock.begin(self.phase, in_update=False)
        called = self.trigger(trainer)
        if not called:
            clock.base_span = False  # no call, no span
        return called

    def __getattr__(self, name):
        return getattr(self.trigger, name)


def _timed_update(clock, update, targets):
    # ``targets``: ids of the links whose forward is wrapped already (the
    # usual loss function, the optimizer's target): not wrapped twice.
    def call(lossfun=None, *args, **kwargs):
        if not clock.in_update:
            return update(lossfun, *args, **kwargs)
        if lossfun is not None and id(lossfun) not in targets:
            lossfun = timed(clock, lossfun, phases.FORWARD)
        clock.enter(phases.OPTIMIZER)
        try:
            return update(lossfun, *args, **kwargs)
        finally:
            clock.leave()
    return call


def install(clock, trainer):
    """Puts the wrappers on ``trainer``'s objects (see the module).

    Returns:
        Patches: What :meth:`Patches.restore` takes off.
    """
    patches = Patches()
    try:
        _install(patches, clock, trainer)
    except BaseException:
        patches.restore()
        raise
    return patches


def _install(patches, clock, trainer):
    updater = trainer.updater
    # StandardUpdater keeps its iterators in ``_iterators`` (no public list).
    for iterator in getattr(updater, '_iterators', {}).values():
        patches.set(iterator, 'next',
                    timed(clock, iterator.next, phases.DATA))
    converter = vars(updater).get('converter')
    if converter is not None:
        if isinstance(converter, dataset.Converter):
            wrapper = _TimedConverter(clock, converter)
        else:
            wrapper = timed(clock, converter, phases.DATA)
        patches.set(updater, 'converter', wrapper)
    optimizers = updater.get_all_optimizers().values()
    targets = [optimizer.target for optimizer in optimizers]
    # ParallelUpdater's copies of the model (no public accessor).
    targets.extend(getattr(updater, '_models', {}).values())
    wrapped = set()
    for target in targets:
        if id(target) not in wrapped:
            wrapped.add(id(target))
            patches.set(target, 'forward',
                        timed(clock, target.forward, phases.FORWARD))
    for optimizer in optimizers:
        patches.set(optimizer, 'update',
                    _timed_update(clock, optimizer.update, wrapped))
        comm = vars(optimizer).get('communicator')  # ChainerMN
        if comm is not None and hasattr(comm, 'multi_node_mean_grad'):
            patches.set(comm, 'multi_node_mean_grad', timed(
                clock, comm.multi_node_mean_grad, phases.ALLREDUCE))
    thread = threading.get_ident()
    patches.set(chainer.Variable, 'backward', timed(
        clock, chainer.Variable.backward, phases.BACKWARD, thread))
    patches.set(chainer, 'grad', timed(
        clock, chainer.grad, phases.BACKWARD, thread))
    # Trainer keeps its extensions in ``_extensions`` (no public list).
    for name, entry in trainer._extensions.items():
        patches.set(entry, 'trigger', TimedTrigger(
            clock, entry.trigger, phases.EXTENSION + name))

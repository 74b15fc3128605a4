"""The package's one entry per thread in each of Chainer's hook registries:
the one listener, an :class:`Observer` calling each, or nothing
(docs/internals.md, "What the package sets, and where it is put back").
"""

import collections

import chainer

from chainer_hookext import _copies


#: The key of the package's one entry in each of a thread's registries.
KEY = 'chainer_hookext.observer'

#: The methods Chainer calls, per kind of hook.
EVENTS = {
    chainer.LinkHook: ('forward_preprocess', 'forward_postprocess'),
    chainer.FunctionHook: ('forward_preprocess', 'forward_postprocess',
                           'backward_preprocess', 'backward_postprocess'),
}

# {id(registry): Observer} of every thread: a listener may leave from any.
_observers = {}


def observer_of(registry, kind=None):
    """The observer of ``registry``; made when ``kind`` is given."""
    observer = _observers.get(id(registry))
    if observer is None or observer.registry is not registry:
        if kind is None:
            return None
        observer = _OBSERVERS[kind](registry)
        _observers[id(registry)] = observer
    return observer


def join(registry, key, hook, first=False):
    """Makes ``hook`` a listener under ``key`` and calls ``added(None)``."""
    kind = chainer.LinkHook if isinstance(hook, chainer.LinkHook) else (
        chainer.FunctionHook)
    observer_of(registry, kind).join(key, hook, first)


def leave(registry, key, hook):
    """Takes ``hook`` out (``deleted(None)``); whether it was there."""
    observer = observer_of(registry)
    return observer is not None and observer.leave(key, hook)


def move(registry, key, hook, first):
    """Moves ``hook`` before the others (``first``) or after."""
    observer = observer_of(registry)
    if observer is not None and observer.listeners.get(key) is hook:
        observer.listeners.move_to_end(key, last=not first)
        observer.compose()


def changed(hook):
    """Tells the observers that the listener ``hook`` swapped methods."""
    for observer in list(_observers.values()):
        if any(listener is hook for listener in observer.listeners.values()):
            observer.compose()


def use_method(hook, event, method=None):
    """Makes ``method`` (``None``: the class's) what ``event`` calls."""
    if method is None:
        if _copies.own_attribute(hook, event) is None:
            return
        delattr(hook, event)
    elif getattr(hook, event) == method:
        return
    else:
        setattr(hook, event, method)
    changed(hook)


def listeners(registry):
    """``{key: listener}`` of ``registry``, in calling order."""
    observer = observer_of(registry)
    return collections.OrderedDict(
        () if observer is None else observer.listeners)


class Observer:
    """The package's entry in one registry; ``listeners`` in call order."""

    name = 'observer'

    def __init__(self, registry):
        self.registry = registry
        self.listeners = collections.OrderedDict()

    def __reduce__(self):
        raise TypeError('the observer of a thread is not copied')

    def join(self, key, hook, first):
        if key in self.listeners:
            raise KeyError(f'{key} listens already')
        self.listeners[key] = hook
        if first:
            self.listeners.move_to_end(key, last=False)
        try:
            hook.added(None)
        except BaseException:
            del self.listeners[key]
            raise
        finally:
            self.compose()

    def leave(self, key, hook):
        if self.listeners.get(key) is not hook:
            return False
        del self.listeners[key]
        self.compose()
        hook.deleted(None)
        return True

    def compose(self):
        hooks = list(self.listeners.values())
        if not hooks:
            self.registry.pop(KEY, None)
            if _observers.get(id(self.registry)) is self:
                del _observers[id(self.registry)]
            return
        if len(hooks) == 1:
            self.registry[KEY] = hooks[0]
            return
        for event in EVENTS[self.kind]:
            methods = [getattr(hook, event) for hook in hooks
                       if _overrides(hook, self.kind, event)]
            setattr(self, event, _calling_each(methods, self.kind, event))
        self.registry[KEY] = self


class LinkObserver(Observer, chainer.LinkHook):
    kind = chainer.LinkHook


class FunctionObserver(Observer, chainer.FunctionHook):
    kind = chainer.FunctionHook


_OBSERVERS = {chainer.LinkHook: LinkObserver,
              chainer.FunctionHook: FunctionObserver}


def _overrides(hook, kind, event):
    method = getattr(hook, event)
    return getattr(method, '__func__', method) is not getattr(kind, event)


def _nothing(*args):
    pass


def _calling_each(methods, kind, event):
    # Two (a timer and the phase marks, the common case): no loop.

    if not methods:
        return _nothing
    if len(methods) == 1:
        return methods[0]
    if len(methods) == 2:
        first, second = methods
        if kind is chainer.LinkHook:
            def both(args):
                first(args)
                second(args)
        elif event.startswith('forward'):
            def both(function, in_data):
                first(function, in_data)
                second(function, in_data)
        else:
            def both(function, in_data, out_grad):
                first(function, in_data, out_grad)
                second(function, in_data, out_grad)
        return both
    if kind is chainer.LinkHook:
        def each(args):
            for method in methods:
                method(args)
    elif event.startswith('forward'):
        def each(function, in_data):
            for method in methods:
                method(function, in_data)
    else:
        def each(function, in_data, out_grad):
            for method in methods:
                method(function, in_data, out_grad)
    return each

"""One entry per thread in each of Chainer's hook registries.

Chainer calls every hook of a thread's registry at every link call
(``chainer._get_link_hooks()``) and every function call and backward step
(``chainer.get_function_hooks()``).  Every hook of this package is a
*listener* of the thread's :class:`Observer` of that registry instead, which
is the registry's one entry of the package, under :data:`KEY`, whatever
the number of listeners:

* with one listener, the entry is that listener itself: Chainer calls its
  methods as it would without the observer, at no cost more;
* with several, the entry is the observer, whose methods call each
  listener's in turn (a listener's ``first`` puts it before the others:
  its work is done before another listener reads the clock), each event
  made once per change of listeners, not per call;
* with none, there is no entry.

:func:`join` and :func:`leave` call the listener's ``added(None)`` and
``deleted(None)`` as Chainer's registration would.  A listener that swaps
its own methods while it listens (a timer switching to CUDA events, or to
recording spans) does it with :func:`use_method`.  Each registry of each thread
has its observer, as Chainer's registries are thread-local.
"""

import collections

import chainer


#: The key of the package's one entry in each of a thread's registries.
KEY = 'chainer_hookext.observer'

#: The methods Chainer calls, per kind of hook.
EVENTS = {
    chainer.LinkHook: ('forward_preprocess', 'forward_postprocess'),
    chainer.FunctionHook: ('forward_preprocess', 'forward_postprocess',
                           'backward_preprocess', 'backward_postprocess'),
}

# {id(registry): Observer} of the registries with listeners (a registry
# is a thread's, the map the process's: a listener may leave from another
# thread than the one it joined in).
_observers = {}


def observer_of(registry, kind=None):
    """Returns the observer of ``registry``, made when first asked for.

    Args:
        registry (dict): ``chainer._get_link_hooks()`` or
            ``chainer.get_function_hooks()`` of a thread.
        kind (type): ``chainer.LinkHook`` or ``chainer.FunctionHook``, the
            kind of hooks the registry holds; needed to make one.
    """
    observer = _observers.get(id(registry))
    if observer is None or observer.registry is not registry:
        if kind is None:
            return None
        observer = _OBSERVERS[kind](registry)
        _observers[id(registry)] = observer
    return observer


def join(registry, key, hook, first=False):
    """Makes ``hook`` a listener of ``registry``'s observer, under ``key``.

    Calls ``hook.added(None)``; when it raises, the hook is taken out again.
    """
    kind = chainer.LinkHook if isinstance(hook, chainer.LinkHook) else (
        chainer.FunctionHook)
    observer_of(registry, kind).join(key, hook, first)


def leave(registry, key, hook):
    """Takes ``hook`` out of ``registry``'s observer and calls its
    ``deleted(None)``; returns whether it was a listener under ``key``."""
    observer = observer_of(registry)
    return observer is not None and observer.leave(key, hook)


def move(registry, key, hook, first):
    """Moves ``hook``, a listener under ``key``, before the registry's other
    listeners (``first``) or after them."""
    observer = observer_of(registry)
    if observer is not None and observer.listeners.get(key) is hook:
        observer.listeners.move_to_end(key, last=not first)
        observer.compose()


def changed(hook):
    """Tells the observers that ``hook``, a listener, swapped methods."""
    for observer in list(_observers.values()):
        if any(listener is hook for listener in observer.listeners.values()):
            observer.compose()


def use_method(hook, event, method=None):
    """Makes ``method`` what the observers call for ``hook``'s ``event``
    (an instance attribute over the class's), or the class's again
    (``None``); tells them only when it changes.

    Args:
        hook: A listener, or a hook not listening yet.
        event (str): ``'forward_preprocess'`` ...
        method: A bound method of ``hook``, or ``None``.
    """
    current = vars(hook).get(event)
    if method is None:
        if current is None:
            return
        del vars(hook)[event]
    elif current == method:
        return
    else:
        setattr(hook, event, method)
    changed(hook)


def listeners(registry):
    """Returns ``{key: listener}`` of ``registry``'s observer, in the order
    they are called."""
    observer = observer_of(registry)
    return collections.OrderedDict(
        () if observer is None else observer.listeners)


class Observer(object):
    """The package's one entry in one registry of one thread.

    Attributes:
        registry (dict): The registry it is the entry of.
        listeners (collections.OrderedDict): ``{key: hook}`` in the order
            they are called.
    """

    name = 'observer'

    def __init__(self, registry):
        self.registry = registry
        self.listeners = collections.OrderedDict()

    def __reduce__(self):
        # Never copied with a registry: none is pickled.
        raise TypeError('the observer of a thread is not copied')

    def join(self, key, hook, first):
        if key in self.listeners:
            raise KeyError('{} listens already'.format(key))
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
        """Puts in the registry what Chainer is to call: the one listener,
        this observer calling each, or nothing."""
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
    """The observer of a thread's link hooks."""

    kind = chainer.LinkHook


class FunctionObserver(Observer, chainer.FunctionHook):
    """The observer of a thread's function hooks."""

    kind = chainer.FunctionHook


_OBSERVERS = {chainer.LinkHook: LinkObserver,
              chainer.FunctionHook: FunctionObserver}


def _overrides(hook, kind, event):
    # Whether Chainer's call of ``event`` does anything in ``hook``.
    return event in vars(hook) or getattr(type(hook), event) is not getattr(
        kind, event)


def _nothing(*args):
    pass


def _calling_each(methods, kind, event):
    # One function calling each of ``methods`` with Chainer's arguments;
    # two (the common case: a timer and the phase marks) without a loop.
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

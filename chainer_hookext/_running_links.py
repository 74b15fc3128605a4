"""The link calls running in a thread: one :class:`RunningLinks` stack,
shared by its listeners (the debugging hooks, ``LinkMemory``, the memory
timeline), made by the first :func:`subscribe` and dropped by the last
:func:`unsubscribe`; how listeners share calls, the tag, and the recovery
from a forward that raised: docs/internals.md, "Node tagging".
"""

import threading

from chainer_hookext import _chainer
from chainer_hookext import _copies
from chainer_hookext import _frames


_local = threading.local()


def subscribe(listener, tags=False):
    """Joins ``listener`` (with ``tags``, a ``ScopedLinkHook`` tagged in
    :attr:`~RunningLinks.tag`) to the thread's stack, counted; returns it.
    """
    stack = getattr(_local, 'stack', None)
    if stack is None:
        stack = _local.stack = RunningLinks()
    stack.join(listener, tags)
    return stack


def unsubscribe(stack, listener):
    """Takes back one :func:`subscribe`; ``stack``, or ``None`` once empty.
    """
    if stack is None:
        return None
    stack.part(listener)
    if stack.listeners:
        return stack
    if getattr(_local, 'stack', None) is stack:
        _local.stack = None
    return None


def drop_calls_left_open():
    """Drops the calling thread's calls whose ``Link.__call__`` ended."""
    stack = getattr(_local, 'stack', None)
    if stack is not None and stack.calls:
        stack.drop_ended(skip_current=False)


def name_in(tag, listener):
    """``listener``'s name in a tag (``None`` too), or ``None``."""
    if tag:
        for one, name in tag:
            if one is listener:
                return name
    return None


def with_name(tag, listener, name):
    """``tag`` with ``listener``'s name ``name`` (``None``: none)."""
    if name_in(tag, listener) == name:
        return tag
    tag = tuple([pair for pair in tag if pair[0] is not listener])
    return tag if name is None else tag + ((listener, name),)


class Call:
    """One running link call; ``kwargs`` tells which call it is."""

    __slots__ = ('link', 'kwargs', 'parent', 'tag', '_path')

    def __init__(self, link, kwargs, parent):
        self.link = link
        self.kwargs = kwargs
        self.parent = parent
        self._path = None

    @property
    def path(self):
        """``'MLP/l1'``; the class name for a link of no chain."""
        path = self._path
        if path is None:
            link = self.link
            path = link.name
            if path is None:
                path = type(link).__name__
            elif self.parent is not None:
                path = self.parent.path + '/' + path
            self._path = path
        return path


class RunningLinks:
    """The thread's running link calls (``calls``, outermost first).

    ``tag``: ``((listener, name), ...)``, each tagging listener's innermost
    link in scope; one tuple per call, shared by the nodes tagged.
    """

    def __init__(self):
        self.calls = []
        self.tag = ()
        self.listeners = {}
        self._taggers = ()
        self._left = None  # the call the last leave popped

    def __reduce__(self):
        # A copy holds none (link_hooks/_copied_hooks.py).
        return _copies.same, (None,)

    def join(self, listener, tags):
        self.listeners[listener] = self.listeners.get(listener, 0) + 1
        if tags and listener not in self._taggers:
            self._taggers += (listener,)
        if self.calls:
            self.drop_ended(skip_current=False)

    def part(self, listener):
        count = self.listeners.pop(listener, 0) - 1
        if count > 0:
            self.listeners[listener] = count
            return
        self._taggers = tuple(t for t in self._taggers if t is not listener)
        if not self.listeners:
            self.calls = []
            self.tag = ()
            self._left = None

    def enter(self, args):
        """Pushes the call starting, once for all listeners."""
        calls = self.calls
        parent = None
        if calls:
            parent = calls[-1]
            if parent.kwargs is args.kwargs:
                return parent  # another listener pushed it
            if args.link.name is None:  # a root: calls left open below?
                parent = self.drop_ended(skip_current=True)
        call = Call(args.link, args.kwargs, parent)
        tag = () if parent is None else parent.tag
        if self._taggers:
            tag = self._tag(call, tag)
        call.tag = self.tag = tag
        calls.append(call)
        return call

    def _tag(self, call, tag):
        train = None
        key = id(call.link)
        for listener in self._taggers:
            mode = listener.config_train
            if mode is not None:
                if train is None:
                    train = _chainer.is_train()
                if mode != train:
                    continue
            names = listener.link_names
            if names is None:
                name = call.path
            else:
                name = names.get(key)
                if name is None:
                    continue
            if not tag:
                tag = ((listener, name),)
            else:
                tag = with_name(tag, listener, name)
        return tag

    def leave(self, args):
        """Pops the call ending (and those left open above it), once;
        ``None`` when it is not on the stack."""
        kwargs = args.kwargs
        left = self._left
        if left is not None and left.kwargs is kwargs:
            return left  # another listener popped it
        calls = self.calls
        if calls and calls[-1].kwargs is kwargs:
            call = calls.pop()
        else:
            depth = len(calls) - 1
            while depth >= 0 and calls[depth].kwargs is not kwargs:
                depth -= 1
            if depth < 0:
                return None
            call = calls[depth]
            self._drop(depth + 1)
            del calls[-1]
        self.tag = calls[-1].tag if calls else ()
        self._left = call
        return call

    def drop_ended(self, skip_current):
        """Drops the calls whose ``Link.__call__`` ended (a slow path);
        returns the innermost call left."""
        self._drop(_frames.still_running(
            [call.link for call in self.calls], skip_current))
        calls = self.calls
        self.tag = calls[-1].tag if calls else ()
        return calls[-1] if calls else None

    def _drop(self, depth):
        dropped = self.calls[depth:]
        if not dropped:
            return
        del self.calls[depth:]
        dropped.reverse()
        for listener in list(self.listeners):
            calls_dropped = getattr(listener, 'calls_dropped', None)
            if calls_dropped is not None:
                calls_dropped(dropped)

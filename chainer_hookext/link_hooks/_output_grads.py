"""The thread's one node tagger, :class:`OutputGrads`: the gradients w.r.t.
link outputs (``NonFiniteHook``, ``CallbackHook(backward=...)``,
``GradientStatisticsHook``) and ``LinkMemory``'s nodes, through one function
hook per thread (docs/internals.md, "The gradients w.r.t. a link's outputs"
and "Node tagging").
"""

import threading
import weakref

import chainer

from chainer_hookext import _arrays
from chainer_hookext import _chainer
from chainer_hookext import _observer
from chainer_hookext import _running_links
from chainer_hookext import _tagging


_local = threading.local()
#: A position of a call whose node was not stepped yet.
_WAITING = object()


def subscribe(listener, steps=False, nodes=False):
    """Makes ``listener`` listen to the thread's :class:`OutputGrads`
    (counted); returns the tagger.

    A marking listener has ``output_grad(call, position, grad)``,
    ``call_done(call)`` and ``waits``; with ``steps``, ``grad_step(function,
    running, out_grad, prev)``; with ``nodes`` (one at a time),
    ``tag_node(function, in_data, tag)``, ``backward_step_started(function,
    tag)`` and ``backward_step_ended(function, tag)``.
    """
    tagger = _tagging.register(getattr(_local, 'tagger', None), OutputGrads)
    _local.tagger = tagger
    try:
        tagger.join(listener, steps, nodes)
    except BaseException:
        unsubscribe(tagger, listener)
        raise
    return tagger


def unsubscribe(tagger, listener):
    """Takes back one :func:`subscribe`; returns the tagger or ``None``."""
    if tagger is None:
        return None
    try:
        tagger.leave(listener)
    finally:
        left = _tagging.unregister(tagger)
        if left is None and getattr(_local, 'tagger', None) is tagger:
            _local.tagger = None
    return left


class Call:
    """A marked link call; ``grads``: one per output, then per input."""

    __slots__ = ('listener', 'link', 'keys', 'grads', 'waiting', 'started')

    def __init__(self, listener, link, keys, grads):
        self.listener = listener
        self.link = link
        self.keys = keys
        self.grads = grads
        self.waiting = 0
        self.started = False

    @property
    def grad_outputs(self):
        return tuple(self.grads[:len(self.keys)])

    @property
    def grad_inputs(self):
        return tuple(self.grads[len(self.keys):])


class Marked:
    """A marked node's tag; ``running``: its tag otherwise; ``marks``:
    ``[(call, position, index)]``; ``reads``: ``[(listener, key, index)]``.
    Made by :meth:`OutputGrads._marked`, which sets the three."""

    __slots__ = ('running', 'marks', 'reads')


class OutputGrads(_tagging.NodeTagger):
    """The thread's tagger of link outputs' gradients (see the module);
    ``recorder``, the node listener; ``prev``, a weak reference to the last
    backward step's node, while a step listener listens."""

    name = 'OutputGrads'
    #: One per thread (slot 0): its own attribute, beside the timers'.
    tag_name = '_chainer_hookext_links'

    def __init__(self):
        super().__init__()
        self.links = _running_links.subscribe(self)
        self.recorder = None
        self.started = []
        self.prev = None
        self._counts = {}  # {listener: subscriptions}
        self._steps = ()

    def join(self, listener, steps, nodes):
        if nodes and self.recorder is not listener:
            if self.recorder is not None:
                raise RuntimeError(
                    f'{self.name}: {self.recorder!r} listens to the nodes '
                    'already; one node listener at a time.')
            self._record(listener)
        self._counts[listener] = self._counts.get(listener, 0) + 1
        if steps and listener not in self._steps:
            self._steps += (listener,)

    def leave(self, listener):
        count = self._counts.get(listener, 0) - 1
        if count > 0:
            self._counts[listener] = count
            return
        self._counts.pop(listener, None)
        if listener is self.recorder:
            self._record(None)
        if listener in self._steps:
            self._steps = tuple(s for s in self._steps if s is not listener)
            if not self._steps:
                self.prev = None
        self.flush(listener)

    def unregister(self):
        super().unregister()
        if not self.registered:
            self.links = _running_links.unsubscribe(self.links, self)

    def _record(self, recorder):
        # First in the function hooks: its work is a pause told of before
        # another hook reads the clock.
        self.recorder = recorder
        self.put_first(recorder is not None)
        _observer.use_method(self, 'backward_postprocess', None if (
            recorder is None) else self._step_ended)

    def forward_preprocess(self, function, in_data):
        tag = self.links.tag
        recorder = self.recorder
        if recorder is not None:
            tag = recorder.tag_node(function, in_data, tag)
        function._chainer_hookext_links = tag

    def mark(self, listener, link, out, inputs=None):
        """Marks the nodes making ``out`` (and ``inputs``): a Call or None."""
        if isinstance(out, chainer.Variable):
            keys, values = [()], [out]
        else:
            keys, values = [], []
            for key, value in _arrays.walk(out, variables=True):
                keys.append(key)
                values.append(value)
        if inputs is not None:
            values.extend(v for _, v in _arrays.walk(inputs, variables=True))
        call = Call(listener, link, keys, [None] * len(values))
        for position, value in enumerate(values):
            if not isinstance(value, chainer.Variable):
                continue
            tag, index = self._marked(value)
            if tag is None:
                continue
            if tag.marks is None:
                tag.marks = []
            tag.marks.append((call, position, index))
            call.grads[position] = _WAITING
            call.waiting += 1
        if _WAITING not in call.grads[:len(keys)]:
            call.grads = [None] * len(values)
            call.waiting = 0
            return None
        return call

    def watch(self, listener, name, out):
        """Calls ``listener.add_grad((name, key), grad)`` at each output's
        node's step."""
        if isinstance(out, chainer.Variable):  # one output: no walk
            tag, index = self._marked(out)
            if tag is not None:
                _read(tag, (listener, (name, ()), index))
            return
        for key, value in _arrays.walk(out, variables=True):
            if isinstance(value, chainer.Variable):
                tag, index = self._marked(value)
                if tag is not None:
                    _read(tag, (listener, (name, key), index))

    def _marked(self, variable):
        # (creator's Marked tag, made if need be, output index) or
        # (None, None).
        # Variable.node and .creator_node check for ChainerX first: the
        # attributes behind them cost half as much (_chainer.py).
        variable_node = variable._node
        node = None if variable_node is None else variable_node._creator_node
        if node is None:
            return None, None
        outputs = node.outputs
        if len(outputs) == 1:
            index = 0 if outputs[0]() is variable_node else None
        else:
            index = _output_index(outputs, variable_node)
        if index is None:
            return None, None
        try:
            tag = node._chainer_hookext_links
        except AttributeError:
            tag = None
        if type(tag) is Marked:
            return tag, index
        # Set here, not by an __init__: a call from C costs more than this.
        marked = node._chainer_hookext_links = Marked()
        marked.running = tag
        marked.marks = None
        marked.reads = None
        return marked, index

    def name_of(self, listener, function):
        """``listener``'s innermost running link when ``function`` was made."""
        tag = getattr(function, '_chainer_hookext_links', None)
        if type(tag) is Marked:
            tag = tag.running
        return _running_links.name_in(tag, listener)

    def backward_preprocess(self, function, in_data, out_grad):
        try:
            tag = function._chainer_hookext_links
        except AttributeError:
            tag = None
        marked = None
        if type(tag) is Marked:
            marked, tag = tag, tag.running
        if self.recorder is not None:
            self.recorder.backward_step_started(function, tag)
        if self._steps:
            prev, self.prev = self.prev, weakref.ref(function)
            for listener in self._steps:
                listener.grad_step(function, tag, out_grad, prev)
        if marked is None:
            return
        reads = marked.reads
        if reads is not None:
            marked.reads = None  # once: not again in a second backward
            for listener, key, index in reads:
                grad = out_grad[index]
                if grad is not None:
                    listener.add_grad(key, grad)
        if marked.marks:
            self._seen(marked, out_grad)

    def _step_ended(self, function, in_data, out_grad):
        try:
            tag = function._chainer_hookext_links
        except AttributeError:
            tag = None
        if type(tag) is Marked:
            tag = tag.running
        self.recorder.backward_step_ended(function, tag)

    def _seen(self, marked, out_grad):
        # The marks' gradients (the reads are backward_preprocess's).
        done = []
        for call, position, index in reversed(marked.marks):
            if call.grads[position] is not _WAITING:
                continue  # done already (a call flushed, a second backward)
            grad = out_grad[index]
            call.grads[position] = None if grad is None else (
                call.listener.output_grad(call, position, grad))
            call.waiting -= 1
            if not call.waiting:
                done.append(call)
            elif not call.started:
                call.started = True
                if call.listener.waits:
                    self.started.append(call)
        for call in done:
            call.listener.call_done(call)

    def forward_begins(self):
        """Does the calls partly seen (not in ``F.forget``'s recomputing)."""
        if self.started and not _chainer.is_recomputing():
            self.flush()

    def flush(self, listener=None):
        """Does the calls partly seen (of ``listener``; ``None``: all)."""
        calls, kept = self.started, []
        self.started = kept
        first_error = None
        for call in calls:
            if not call.waiting:
                continue
            if listener is not None and call.listener is not listener:
                kept.append(call)
                continue
            call.grads = [None if g is _WAITING else g for g in call.grads]
            call.waiting = 0
            try:
                call.listener.call_done(call)
            except Exception as e:  # the others are done all the same
                first_error = first_error or e
        if first_error is not None:
            raise first_error


def _read(marked, read):
    if marked.reads is None:
        marked.reads = [read]
    else:
        marked.reads.append(read)


def _output_index(outputs, variable_node):
    for index, ref in enumerate(outputs):
        if ref() is variable_node:
            return index
    return None

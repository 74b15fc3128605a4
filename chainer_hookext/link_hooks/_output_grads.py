"""The thread's one node tagger: link outputs' gradients, LinkMemory's nodes.

Four hooks read function nodes through one function hook per thread, the
thread's :class:`OutputGrads`, a node tagger (:mod:`chainer_hookext._tagging`)
registered once through :mod:`chainer_hookext._registry` while any of them
listens (:func:`subscribe`, :func:`unsubscribe`: counted, removed when the
last one leaves): :class:`~chainer_hookext.NonFiniteHook` (its gradient
check), :class:`~chainer_hookext.CallbackHook` (``backward=``),
:class:`~chainer_hookext.GradientStatisticsHook`, which read what flows
backward into a link's outputs, and ``LinkMemory``'s
:class:`~chainer_hookext.memory.tracer.MemoryTracer`, which keeps the nodes
of its measured iteration.

* **Forward.** Each new function node is tagged with the tag of the
  thread's running links (:attr:`~chainer_hookext._running_links.
  RunningLinks.tag`: the innermost running link of each listener that
  tags, one immutable tuple shared by the nodes made under the same links).
  At the end of a link call a listener calls
  :meth:`~OutputGrads.mark` with the call's outputs (and, to have them, its
  inputs): it makes one :class:`Call` record and adds ``(call, position,
  index)`` to the tag of the node that created each output Variable
  (``creator_node``; ``index``: which output of that node it is).  A
  listener that only reads each gradient (``GradientStatisticsHook``)
  calls :meth:`~OutputGrads.watch` instead: no record, ``(read, key,
  index)`` on the node's tag.
* **Backward.** Chainer gives the step of a node the gradient w.r.t. each
  of its outputs (``out_grad``), before that node's backward runs.  The
  step listeners check it (every tagged node), then each watch of the node
  hands its output's gradient to ``read(key, grad)`` and each mark to its
  call's listener (``output_grad(call, position, grad)``); each reads it at
  once, and a node's watches and marks are read once (not again in a
  second backward over the graph).  A call whose every marked node was
  seen is done (``call_done(call)``: the user's callback).  Readers come
  before callbacks at each step, so a callback cannot change what was
  read.
* **Outputs that get no gradient.** A node nothing downstream uses is never
  stepped; nor is one none of whose inputs needs a gradient (Chainer calls
  no hook for it).  A call some of whose nodes were seen is done with
  ``None`` there when the next forward starts (the next link call of a
  listener outside a backward step), at :meth:`~OutputGrads.flush`, or when
  its listener leaves.  A call none of whose nodes is stepped (no backward)
  is never done; its record dies with the nodes.
* **F.forget.** Its forward runs the link without a graph: no node, no
  mark.  Its backward step calls the link again (``in_recomputing``) and
  runs a backward of its own over the new nodes, where the marks of that
  call are seen: one call done per call of the user's forward.
* **LinkMemory.** Its tracer, a *node listener*, is told of each node
  created (it may give the node another name of its own, that of the
  backward step it is created in) and of each backward step's start and
  end.  Its work is a pause of every measurement
  (:mod:`chainer_hookext.timing.pauses`): while it listens the tagger is
  first in the thread's function hooks, before any other hook reads the
  clock.
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
    """Makes ``listener`` listen to the thread's :class:`OutputGrads`.

    Counted: each call needs one :func:`unsubscribe`.

    Args:
        listener: A hook; one that calls :meth:`~OutputGrads.mark` has
            ``output_grad(call, position, grad)`` (returns what the call
            keeps for that position), ``call_done(call)`` and ``waits``
            (whether a call it marks waits for every node); with
            ``steps=True`` a hook with ``grad_step(function, running,
            out_grad, prev)``, called at every backward step
            (``running``: the node's tag of running links); with
            ``nodes=True`` one with ``tag_node(function, in_data, tag)``
            (returns the tag to store), ``backward_step_started(function,
            tag)`` and ``backward_step_ended(function, tag)``.
        steps (bool): Whether it is a step listener.
        nodes (bool): Whether it is the node listener (one at a time).

    Returns:
        OutputGrads: The thread's tagger, registered.
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
    """Takes back one :func:`subscribe` of ``listener``.

    On its last, the listener's calls still waiting are done (with
    ``None`` for the nodes not seen).

    Returns:
        OutputGrads: ``tagger`` while still registered, else ``None``.
    """
    if tagger is None:
        return None
    try:
        tagger.leave(listener)
    finally:
        left = _tagging.unregister(tagger)
        if left is None and getattr(_local, 'tagger', None) is tagger:
            _local.tagger = None
    return left


class Call(object):
    """One call of a link, as a listener marked it.

    Attributes:
        listener: The hook that marked it.
        link (~chainer.Link): The link called.
        name (str): Its name, as the listener names it.
        keys (list of tuple): Where each output array is in the output
            (:func:`~chainer_hookext._arrays.walk`), one per output
            position.
        grads (list): One per position, outputs then inputs: what the
            listener kept of its gradient, or ``None``.
        waiting (int): The marks not seen yet.
        started (bool): Whether a mark of it was seen.
    """

    __slots__ = ('listener', 'link', 'name', 'keys', 'grads', 'waiting',
                 'started')

    def __init__(self, listener, link, name, keys, grads):
        self.listener = listener
        self.link = link
        self.name = name
        self.keys = keys
        self.grads = grads
        self.waiting = 0
        self.started = False

    @property
    def grad_outputs(self):
        """The kept gradients w.r.t. the outputs, a tuple."""
        return tuple(self.grads[:len(self.keys)])

    @property
    def grad_inputs(self):
        """The kept gradients w.r.t. the inputs, a tuple."""
        return tuple(self.grads[len(self.keys):])


class Marked(object):
    """The tag of a node that created a link call's output: what it would
    be tagged with (``running``), ``marks``, ``[(call, position, index)]``
    (:meth:`OutputGrads.mark`), and ``reads``, ``[(read, key, index)]``
    (:meth:`OutputGrads.watch`); each list ``None`` until needed."""

    __slots__ = ('running', 'marks', 'reads')

    def __init__(self, running):
        self.running = running
        self.marks = None
        self.reads = None


class OutputGrads(_tagging.NodeTagger):
    """The thread's tagger of link outputs' gradients (see the module).

    Attributes:
        links (~chainer_hookext._running_links.RunningLinks): The thread's
            running links, whose tag each new node gets.
        recorder: The node listener, or ``None``.
        started (list of Call): Calls of waiting listeners partly seen.
        prev: A weak reference to the node of the last backward step, while
            a step listener listens.
    """

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
                    '{}: {!r} listens to the nodes already; one node '
                    'listener at a time.'.format(self.name, self.recorder))
            self._record(listener)
        count = self._counts.get(listener, 0)
        self._counts[listener] = count + 1
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
        # The node listener joins (first in the function hooks: its work
        # is a pause told of before another hook reads the clock) or
        # leaves (``None``).
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

    def mark(self, listener, link, name, out, inputs=None):
        """Marks the nodes that created the outputs of one link call.

        Args:
            listener: The hook marking it (see :func:`subscribe`).
            link (~chainer.Link): The link.
            name (str): Its name.
            out: The call's output (``args.out``).
            inputs: The call's inputs (``(args.args, args.kwargs)``) to have
                their gradients too, or ``None``.

        Returns:
            Call: The record, or ``None`` when no output has a node.
        """
        if isinstance(out, chainer.Variable):
            keys, values = [()], [out]
        else:
            keys, values = [], []
            for key, value in _arrays.walk(out, variables=True):
                keys.append(key)
                values.append(value)
        if inputs is not None:
            values.extend(v for _, v in _arrays.walk(inputs, variables=True))
        call = Call(listener, link, name, keys, [None] * len(values))
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
            # No output can get a gradient: no call to be done.
            call.grads = [None] * len(values)
            call.waiting = 0
            return None
        return call

    def watch(self, read, name, out):
        """Has ``read((name, key), grad)`` called with the gradient w.r.t.
        each output Variable of one link call (``key``: where it is in
        ``out``), at the backward step of the node that created it, once.

        The light :meth:`mark` of a listener that reads each gradient at
        once and keeps no record of the call (no ``call_done``).
        """
        outputs = (((), out),) if isinstance(out, chainer.Variable) else (
            _arrays.walk(out, variables=True))
        for key, value in outputs:
            if not isinstance(value, chainer.Variable):
                continue
            tag, index = self._marked(value)
            if tag is None:
                continue
            if tag.reads is None:
                tag.reads = []
            tag.reads.append((read, (name, key), index))

    def _marked(self, variable):
        # The Marked tag of the node that created ``variable`` (made if
        # need be) and which of its outputs it is; (None, None) when it
        # has no node.
        node = variable.creator_node
        if node is None:
            return None, None
        outputs = node.outputs
        variable_node = variable.node
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
        if type(tag) is not Marked:
            tag = node._chainer_hookext_links = Marked(tag)
        return tag, index

    def name_of(self, listener, function):
        """The name of the innermost link running for ``listener`` when
        ``function`` was made (``None`` when none)."""
        try:
            tag = function._chainer_hookext_links
        except AttributeError:
            return None
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
        if marked is not None:
            self._seen(marked, out_grad)

    def _step_ended(self, function, in_data, out_grad):
        # backward_postprocess, while a node listener listens.
        try:
            tag = function._chainer_hookext_links
        except AttributeError:
            tag = None
        if type(tag) is Marked:
            tag = tag.running
        self.recorder.backward_step_ended(function, tag)

    def _seen(self, marked, out_grad):
        # Readers first, then the calls done (the callbacks).
        reads = marked.reads
        if reads is not None:
            marked.reads = None  # once: not again in a second backward
            for read, key, index in reads:
                grad = out_grad[index]
                if grad is not None:
                    read(key, grad)
        marks = marked.marks
        if not marks:
            return
        done = []
        for call, position, index in reversed(marks):
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
        """Called by a waiting listener at a link call: outside a backward
        step (``F.forget``'s recomputation), the calls partly seen are done.
        """
        if self.started and not _chainer.is_recomputing():
            self.flush()

    def flush(self, listener=None):
        """Does the calls partly seen (of ``listener``; ``None``: all),
        with ``None`` for the nodes not seen."""
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


def _output_index(outputs, variable_node):
    # Which of a node's ``outputs`` (weak references) ``variable_node`` is.
    for index, ref in enumerate(outputs):
        if ref() is variable_node:
            return index
    return None

"""What one measured training iteration keeps alive, per link:
:class:`MemoryTracer`, the link hook ``LinkMemory`` registers for the
iterations it measures (docs/memory.md, "What counts").

It reads the running links from :mod:`chainer_hookext._running_links`,
listens to the thread's one node tagger
(:class:`~chainer_hookext.link_hooks._output_grads.OutputGrads`) and reads
the graph at the first backward step after forward work.  Nothing is kept
per call but the measured iteration's nodes and the links' input arrays
(weak references) and a few figures per link.
"""

import itertools
import weakref

import chainer

from chainer_hookext import _running_links
from chainer_hookext.link_hooks import _output_grads
from chainer_hookext.link_hooks import scoped_link_hook
from chainer_hookext.memory import buffers
from chainer_hookext.memory import graph
from chainer_hookext.memory import pool
from chainer_hookext.timing import clock
from chainer_hookext.timing import pauses


class MemoryTracer(scoped_link_hook.ScopedLinkHook):
    """Link hook measuring the memory of one training iteration per link.

    Set its scope (:meth:`set_scope`, with names) and the links whose
    arrays are not to be counted (:attr:`model`) before registering it;
    read the figures after.

    Attributes:
        model (list): Links whose parameters, gradients, persistent values
            and other arrays held as attributes are made outside the
            forward: they are not counted (the attributes' arrays as they
            are when the hook is registered, the others as they are at
            each reading).
        parents (dict): ``{name: name of the innermost link in scope that
            called it first, or None}``.
        forward_time (dict): ``{name: seconds}`` of its forward calls,
            inclusive.
        forward_peak (dict): ``{name: bytes}``: on a GPU, the largest peak
            of live bytes above a call's start.
        activations (dict): ``{name or None: bytes}`` kept for backward by
            the nodes each link created itself (``None``: outside every
            link), read at the last backward that followed forward work;
            ``None`` before the first.
        forgettable (dict): ``{name: bytes}`` ``F.forget`` around the
            link's calls would free (:func:`.graph.forgettable_bytes`).
        backward_peak (dict): ``{name or None: bytes}``: on a GPU, the
            largest peak above a backward step's start of the link's nodes.
        watch_pool (bool): Watch the CuPy pool (set it for a model on a
            GPU before registering the hook).
        gpu (bool): Whether the CuPy pool is watched.
    """

    name = 'LinkMemory'

    def __init__(self):
        super().__init__(train=True, eval=False)
        #: The name its work is charged to (``extension/<owner>``): the
        #: extension's name in the trainer.
        self.owner = 'LinkMemory'
        self.model = []
        self._listening = None  # pauses.listen's handle, while registered
        self.watch_pool = False
        self.gpu = False
        self._running = None  # the thread's running links, while registered
        self._grads = None  # the thread's node tagger, while registered
        self._end = None  # the clock read of the running postprocess
        self._pool_hook = None
        self.reset()

    def reset(self):
        """Forgets the figures, before an iteration is measured."""
        self.parents = {}
        self.forward_time = {}
        self.forward_peak = {}
        self.activations = None
        self.forgettable = {}
        self.backward_peak = {}
        self.peaks = pool.LivePeaks()
        self._clear()

    def _clear(self):
        # [(weakref to a node, tag, [weakref to an input array or None])]
        self.nodes = []
        self.inputs = {}  # {name: [weakref to an input array of a call]}
        self.batch = []  # [weakref to an array given to an outermost call]
        self.before = []  # [weakref to a model's attribute array]
        self.forward_work = False  # a node created since the last reading
        self.starts = {}  # {Call: start} of the running calls in scope
        # [(node, tag, whether it runs with backprop)] of the running
        # backward steps
        self.steps = []

    def __getstate__(self):
        # A pickle or a copy (of the trainer, during the measured
        # iteration) keeps the figures, not the graph being walked.
        state = dict(vars(self))
        state.update(nodes=[], inputs={}, starts={}, steps=[], batch=[],
                     before=[], _running=None, _grads=None)
        return state

    # -- registration --------------------------------------------------------
    def added(self, link):
        self._listening = pauses.listen(self)
        self._running = _running_links.subscribe(self, tags=True)
        self._grads = _output_grads.subscribe(self, nodes=True)
        if self.watch_pool and self._pool_hook is None:
            self._pool_hook = pool.new_pool_hook(self.peaks)
            self._pool_hook.__enter__()
        self.gpu = self._pool_hook is not None
        self.before = [weakref.ref(array) for array in
                       graph.attribute_arrays(self.model)]

    def deleted(self, link):
        handle, self._listening = self._listening, None
        pauses.stop_listening(handle)
        try:
            self._grads = _output_grads.unsubscribe(self._grads, self)
        finally:
            self._running = _running_links.unsubscribe(self._running, self)
        hook, self._pool_hook = self._pool_hook, None
        if hook is not None:
            hook.__exit__(None, None, None)
        self._clear()

    # -- forward -------------------------------------------------------------
    @property
    def top(self):
        """The name of the innermost running link in scope, or ``None``."""
        running = self._running
        return None if running is None else _running_links.name_in(
            running.tag, self)

    # Its work is a pause of every measurement (:mod:`..timing.pauses`),
    # told of as it ends; registered first in the thread's link and
    # function hooks, it works before any other hook reads the clock.
    def paused(self, name, start, end):
        """Takes a pause out of the running links' forward times."""
        length = end - start
        starts = self.starts
        for call in starts:
            starts[call] += length

    def forward_preprocess(self, args):
        start = clock.now()
        call = self._running.enter(args)
        timed = self._forward_preprocess(args, call)
        end = pauses.paused(self.owner, start)
        if timed:  # its forward starts now
            self.starts[call] = end

    def _forward_preprocess(self, args, call):
        # Whether the call is one of the scope's, its books opened.
        link = args.link
        if self.steps or not self.in_scope(link):  # F.forget's, in a step
            return False
        name = self.link_names[id(link)]
        parent = None if call.parent is None else _running_links.name_in(
            call.parent.tag, self)
        self.parents.setdefault(name, parent)
        inputs = self.inputs.setdefault(name, [])
        outermost = parent is None
        for arg in itertools.chain(args.args, args.kwargs.values()):
            leaf = True
            if isinstance(arg, chainer.Variable):
                leaf = arg.creator_node is None
                arg = arg.raw_array
            if buffers.is_array(arg):
                ref = weakref.ref(arg)
                inputs.append(ref)
                if outermost and leaf and chainer.config.enable_backprop:
                    self.batch.append(ref)  # the model's inputs: the batch
        self.peaks.open()
        return True

    def forward_postprocess(self, args):
        end = self._end = clock.now()
        try:
            call = self._running.leave(args)
        finally:
            self._end = None
        if call is not None:
            self._call_ended(call, end)
        pauses.paused(self.owner, end)

    def calls_dropped(self, calls):
        """Ends the calls left open by a forward that raised (the running
        links drop them): at the postprocess that finds them, or now."""
        if not any(call in self.starts for call in calls):
            return
        end = self._end
        if end is None:
            end = clock.now()
        for call in calls:
            self._call_ended(call, end)
        if self._end is None:
            pauses.paused(self.owner, end)

    def _call_ended(self, call, end):
        start = self.starts.pop(call, None)
        if start is None:
            return
        name = self.link_names[id(call.link)]
        peak = self.peaks.close()
        self.forward_time[name] = self.forward_time.get(name, 0.0) + (
            end - start)
        if peak > self.forward_peak.get(name, -1):
            self.forward_peak[name] = peak

    # -- the node tagger's ---------------------------------------------------
    def tag_node(self, function, in_data, tag):
        """Returns the tag of a new node: ``tag``, the running links', with
        :meth:`node_created`'s name for this tracer."""
        start = clock.now()
        tag = _running_links.with_name(
            tag, self, self.node_created(function, in_data))
        pauses.paused(self.owner, start)
        return tag

    def node_created(self, node, in_data):
        """Returns the tag of a new node, and keeps it and its input arrays
        (weakly: a leaf input's array is found through them when no
        variable holds it any more).

        A node created in a backward step takes the step's node's tag, and
        is kept only when the step runs with backprop (double backprop):
        without, Chainer's backward methods apply function nodes that no
        graph keeps.  One created outside every step is forward work: the
        next backward step reads the graph again; unless made without
        backprop (an evaluation in the measured iteration's extensions),
        when no graph keeps it either."""
        steps = self.steps
        if steps:
            _, tag, backprop = steps[-1]
            if not backprop:
                return tag
        else:
            tag = self.top
            if not chainer.config.enable_backprop:
                return tag
            self.forward_work = True
        self.nodes.append((weakref.ref(node), tag, [
            weakref.ref(x) if buffers.is_array(x) else None
            for x in in_data]))
        return tag

    def backward_step_started(self, node, tag):
        """Reads the graph after forward work, and opens the step's books
        (``tag``: the node's)."""
        start = clock.now()
        self._step_started(node, _running_links.name_in(tag, self))
        pauses.paused(self.owner, start)

    def _step_started(self, node, tag):
        if self.forward_work:
            self.forward_work = False
            self._read_graph()
        # One configuration read per step (rather than per node applied in
        # it: Chainer's backward methods apply two or three per step).
        self.steps.append((node, tag, chainer.config.enable_backprop))
        self.peaks.open()

    def _read_graph(self):
        # The bytes the nodes alive keep, per link, and F.forget's.
        nodes, in_data = [], []
        for ref, tag, inputs in self.nodes:
            node = ref()
            if node is not None:
                nodes.append((node, tag))
                in_data.append([None if x is None else x() for x in inputs])
        excluded = graph.model_buffers(self.model)
        excluded.update(_buffer_keys(self.before))
        excluded.update(_buffer_keys(self.batch))
        kept = graph.kept_buffers(nodes, excluded, in_data)
        self.activations = graph.bytes_per_tag(kept)
        self.forgettable = graph.forgettable_bytes(
            kept, self.parents, {name: _buffer_keys(refs)
                                 for name, refs in self.inputs.items()})

    def backward_step_ended(self, node, tag):
        """Closes the step's books (``tag``: the node's)."""
        start = clock.now()
        self._step_ended(node, _running_links.name_in(tag, self))
        pauses.paused(self.owner, start)

    def _step_ended(self, node, tag):
        steps = self.steps
        if not any(step[0] is node for step in steps):
            return
        while True:  # steps that raised end here too
            step = steps.pop()[0]
            peak = self.peaks.close()
            if step is node:
                break
        if peak > self.backward_peak.get(tag, -1):
            self.backward_peak[tag] = peak


def _buffer_keys(refs):
    # The keys of the buffers of the arrays still alive among ``refs``.
    keys = set()
    for ref in refs:
        buffer = buffers.buffer_of(ref())
        if buffer is not None:
            keys.add(buffer.key)
    return keys

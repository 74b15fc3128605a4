"""What one measured training iteration keeps alive, per link: the link
hook ``LinkMemory`` registers (docs/memory.md, "What counts").

It listens to the thread's node tagger (``OutputGrads``) and reads the
graph at the first backward step after forward work.
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

    Set its scope and :attr:`model` before registering it.

    Attributes:
        model (list): Links whose arrays (parameters, gradients, persistent
            values, attributes) are not counted.
        parents (dict): ``{name: its first caller in scope, or None}``.
        activations (dict): ``{name or None: bytes}`` kept for backward by
            each link's own nodes; ``None`` before the first backward.
    """

    name = 'LinkMemory'

    def __init__(self):
        super().__init__(train=True, eval=False)
        #: The name its work is charged to (the extension's).
        self.owner = 'LinkMemory'
        self.model = []
        self._listening = None  # pauses.listen's handle, while registered
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
        self.nodes = []
        self.inputs = {}  # {name: [weakrefs to its calls' input arrays]}
        self.batch = []  # weakrefs to the arrays of outermost calls
        self.before = []  # weakrefs to the model's attribute arrays
        self.forward_work = False  # a node created since the last reading
        self.starts = {}  # {Call: start} of the running calls in scope
        self.steps = []  # [(node, tag, backprop)] of the running steps

    def __getstate__(self):
        # A copy keeps the figures, not the graph being walked.
        return dict(vars(self), nodes=[], inputs={}, starts={}, steps=[],
                    batch=[], before=[], _running=None, _grads=None)

    def added(self, link):
        self._listening = pauses.listen(self)
        self._running = _running_links.subscribe(self, tags=True)
        self._grads = _output_grads.subscribe(self, nodes=True)
        if self._pool_hook is None and pool.on_gpu(self.model):
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

    @property
    def top(self):
        """The name of the innermost running link in scope, or ``None``."""
        running = self._running
        return None if running is None else _running_links.name_in(
            running.tag, self)

    # Its work is a pause of every measurement (timing/pauses.py).
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
        """Ends the calls a forward that raised left open."""
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

    def tag_node(self, function, in_data, tag):
        """Returns ``tag`` with :meth:`node_created`'s name for this tracer."""
        start = clock.now()
        tag = _running_links.with_name(
            tag, self, self.node_created(function, in_data))
        pauses.paused(self.owner, start)
        return tag

    def node_created(self, node, in_data):
        """Returns the tag of a new node; keeps it and its input arrays
        (weakly) unless made without backprop (no graph keeps it).  One
        made in a backward step takes the step's tag."""
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
        """Reads the graph after forward work; opens the step's books."""
        start = clock.now()
        self._step_started(node, _running_links.name_in(tag, self))
        pauses.paused(self.owner, start)

    def _step_started(self, node, tag):
        if self.forward_work:
            self.forward_work = False
            self._read_graph()
        # One config read per step, not per node applied in it.
        self.steps.append((node, tag, chainer.config.enable_backprop))
        self.peaks.open()

    def _read_graph(self):
        nodes, in_data = [], []
        for ref, tag, inputs in self.nodes:
            node = ref()
            if node is not None:
                nodes.append((node, tag))
                in_data.append([None if x is None else x() for x in inputs])
        kept = graph.kept_buffers(nodes, graph.model_buffers(self.model) | (
            _buffer_keys(self.before + self.batch)), in_data)
        self.activations = graph.bytes_per_tag(kept)
        self.forgettable = graph.forgettable_bytes(
            kept, self.parents, {name: _buffer_keys(refs)
                                 for name, refs in self.inputs.items()})

    def backward_step_ended(self, node, tag):
        """Closes the step's books."""
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
    return graph.buffer_keys(ref() for ref in refs)

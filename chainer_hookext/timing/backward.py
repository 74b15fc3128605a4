"""Backward time per link: a function hook charging steps to call records.

A link hook sees only ``Link.forward``.  A :class:`BackwardTimer` (a
:class:`~chainer_hookext._tagging.NodeTagger`, registered and
removed with its :class:`~chainer_hookext.TimerHook`) joins backward to the
links:

* ``forward_preprocess`` tags each new function node with the call stack's
  running record (:attr:`CallStack.top <.call_stack.CallStack.top>`), or
  ``None`` when no timed link runs;
* ``backward_preprocess`` / ``backward_postprocess`` read the clock around
  each backward step and add the step's time to ``record.charged.backward``:
  the backward self time of the link whose forward created the node.  Steps
  of untagged nodes go to the stack's ``outside`` record of the mode, when
  the mode is in scope.

A step that runs a backward of its own (``F.forget`` recomputes its function
in backward, links included) is backward work of the link that called
``F.forget``: the nodes recomputed inside the step take its tag, and the
step's time before its inner steps is charged to it too.

Under a trainer's loop (:attr:`CallStack.parts
<.call_stack.CallStack.parts>`) only the steps run in the update are
charged: a backward an extension runs (of any node, tagged in the update
or not) is nobody's.  One attribute read per step (:attr:`paused`), before
the clock.

A step that raises (e.g. out of memory, the batch skipped by the caller)
is dropped: Chainer calls no ``backward_postprocess`` for it, so when it
ended is not known, and it charges nothing.  The next step tells it from
``F.forget``'s step by the frames (:func:`.._frames.running_step`).

The tag refers to a record, of which the timer keeps one per call path, so
nothing is kept per call.  A record moved into the stored trees when the
hook was removed charges later steps (of nodes still alive) to the stored
record (:func:`.records.merge`).

On a GPU, steps are timed with CUDA events, resolved with the forward ones.

A :class:`FunctionTimer` (``TimerHook(functions=True)``, host clock only)
splits each record's self figures by function type too
(``record.functions``, :class:`~.records.FunctionRecord`): the forward of
each node between its ``forward_preprocess`` and ``forward_postprocess``,
charged to the type under the record the node is tagged with (or, for a
node made outside every timed link in the update or an ``Evaluator``, under
the mode's ``outside`` record); each step's time to the type of the step's
node, as it is charged to the record.  A node applied inside a step (a
gradient node, ``F.forget``'s forward run again) is that step's work, not a
forward of its own: its FLOPs go to the step's type as backward FLOPs.
Its forward methods are the class's, not instance attributes over a
:class:`BackwardTimer`'s: the first version, with instance methods, cost
10,900 instructions per function call over backward timing, this one 6,300
(``benchmarks/README.md``, "By function type").
"""

from chainer.function import FunctionAdapter

from chainer_hookext import _chainer
from chainer_hookext import _frames
from chainer_hookext import _tagging
from chainer_hookext.timing import clock
from chainer_hookext.timing import records

from chainer_hookext.timing import spans


class BackwardTimer(_tagging.NodeTagger):
    """Function hook charging backward steps to a call stack's records.

    Make it with ``_tagging.new_tagger(BackwardTimer, calls, name)``.

    Args:
        calls (~.call_stack.CallStack): The stack whose running record tags
            the nodes.
        name (str): Base of its key in the thread's function hooks.

    Attributes:
        paused (bool): Whether a trainer's loop runs something else than
            its update (:meth:`.CallStack.outside_update`): steps are then
            charged to nobody.
    """

    #: First in the thread's function hooks: the loop's phase marks, after
    #: it, take its clock reads (:attr:`marks`).
    first = True
    #: The loop's :class:`~.marks.PhaseMarks` during its update, else
    #: ``None``: each step's reads are theirs too, so that ``backward``
    #: starts and ends where the steps' spans do (host clock only).
    marks = None
    #: Whether figures are split by function type (:class:`FunctionTimer`).
    functions = False

    def __init__(self, calls, name):
        super().__init__(name)
        self.calls = calls
        self.bottom = calls.bottom
        self._mark = 0.0  # start of the running step: a time or an event
        self._running = None  # the node whose step runs, between pre / post
        self.steps = None  # spans of the steps, while recorded
        # Nodes whose forward runs, with functions (OpenForward), innermost
        # last.
        self._open = []
        self.function_spans = None  # spans of the nodes, while recorded
        #: ``calls.outside_update()``, kept up to date by the loop's
        #: callback (``TimerHook.set_iteration_parts``): one attribute read
        #: per step (reading the loop's own flag: 30 to 40 ns more).
        self.paused = calls.outside_update()

    # -- hot path ----------------------------------------------------------
    def forward_preprocess(self, function, in_data):
        rec = self.calls.top
        if rec is self.bottom:
            rec = None if self._running is None else self._recomputed()
        function._chainer_hookext_tag = rec

    def backward_preprocess(self, function, in_data, out_grad):
        if self.paused:  # outside a trainer's update
            self._running = None
            return
        t = clock.now()
        if self._running is not None:  # inside a step, or one that raised
            self._charge_running(t)
        self._running = function
        self._mark = t
        marks = self.marks
        if marks is not None:
            marks.read_function = function
            marks.read_time = t

    def backward_postprocess(self, function, in_data, out_grad):
        if self.paused:
            return
        t = clock.now()
        self._running = None
        marks = self.marks
        if marks is not None:
            marks.read_function = function
            marks.read_time = t
        try:
            rec = function._chainer_hookext_tag
        except AttributeError:  # created before the hook was registered
            rec = None
        if rec is None:
            rec = self._outside()
            if rec is None:
                self._mark = t
                return
        rec.charged.backward += t - self._mark
        if self.functions:
            function_record(rec.charged, function).backward += t - self._mark
        self._mark = t

    def own_work_done(self, start, end):
        """Takes a pause of our own work (:mod:`.pauses`) out of the
        running step and node forwards (host clock only)."""
        if not self.calls.gpu:
            self._mark += end - start
            for opened in self._open:
                opened.start += end - start

    def nodes_read(self, function):
        """The nodes whose tags a method reads: ``function``, and the node
        whose step runs (at slots 1 and above, :mod:`.._tagging`)."""
        running = self._running
        if running is None or running is function:
            return (function,)
        return (function, running)

    # -- F.forget ----------------------------------------------------------
    def _recomputed(self):
        # The tag of a node created inside a backward step: the step's own
        # when it recomputes (F.forget), else none (a gradient node).  The
        # step is then forgotten (the next nodes skip this call), unless
        # function types are timed: they need to know a step runs.
        if not _chainer.is_recomputing():
            if not self.functions:
                self._running = None
            return None
        return self.tag_of(self._running)

    def forget_running(self):
        """Forgets a step left running by an exception (and node forwards
        left open): no step runs at a trainer's update's start or end."""
        self._running = None
        del self._open[:]

    def _charge_running(self, t):
        # F.forget's step, before its inner steps; a step left by an
        # exception (not running) is dropped.
        if _frames.running_step() is not self._running:
            return
        rec = self.tag_of(self._running) or self._outside()
        if rec is not None:
            rec.charged.backward += t - self._mark
            if self.functions:
                function_record(rec.charged, self._running).backward += (
                    t - self._mark)
            if self.steps is not None:
                self.steps.append(spans.Span(rec.charged, self._mark, t))
                if self.function_spans is not None:
                    self.function_spans.append(spans.FunctionSpan(
                        rec.charged, function_record(
                            rec.charged, self._running).name,
                        self._mark, t, True))

    def _outside(self):
        # The bucket of the current mode, or None when out of scope.
        train = self.calls.call_mode()
        if train is None:
            return None
        return self.calls.outside['train' if train else 'eval']

    #: The class's tagging ``forward_preprocess``, under a name that a
    #: :class:`FunctionTimer`'s own does not hide.
    _tag_node = forward_preprocess

    # -- by function type (FunctionTimer's) ----------------------------------
    #: Whether the class's ``forward_preprocess`` counts FLOPs
    #: (:class:`~.costs.counter.FlopCounter`).
    counts_flops = False

    def _function_forward_preprocess(self, function, in_data):
        rec = self.calls.top
        if rec is self.bottom:
            return self._function_outside_links(function, in_data)
        if self.counts_flops:  # the class's tags and counts
            flops = rec.charged.flops
            self._tag_node(function, in_data)
            flops = rec.charged.flops - flops
        else:
            function._chainer_hookext_tag = rec
        rec = rec.charged
        try:
            one = rec.functions[function.__class__]
        except (KeyError, TypeError):  # its first node here; none yet
            one = function_record(rec, function)
        if self.counts_flops:
            one.flops += flops
        self._open.append(OpenForward(function, one, clock.now(), rec))

    def _function_outside_links(self, function, in_data):
        self._tag_node(function, in_data)
        if self._running is not None:  # applied in a step: the step's
            self.step_node_applied(function, in_data)
            return
        rec = self._outside()  # in the update or an Evaluator, else None
        if rec is None:
            return
        one = function_record(rec, function)
        one.flops += self.node_flops(function, in_data)
        t = clock.now()
        marks = self.marks
        if marks is not None and not self._open:  # a forward may start
            marks.link_call_started(t)
        self._open.append(OpenForward(function, one, t, rec))

    def _function_forward_postprocess(self, function, in_data):
        t = clock.now()
        opened = self._open
        if not opened:
            return
        entry = opened[-1]
        if entry.node is function:
            del opened[-1]
        else:  # not timed, or forwards that raised above it
            index = next((i for i in range(len(opened) - 1, -1, -1)
                          if opened[i].node is function), None)
            if index is None:
                return
            entry = opened[index]
            del opened[index:]
        one = entry.one
        start = entry.start
        one.forward += t - start - entry.inner
        one.count += 1
        if opened:  # a node applied in another's forward: not the other's
            opened[-1].inner += t - start
        if self.function_spans is not None:
            self.function_spans.append(
                spans.FunctionSpan(entry.charged, one.name, start, t, False))

    def node_flops(self, function, in_data):
        """The FLOPs of a node (:class:`~.costs.counter.FlopCounter`
        counts them): 0 here."""
        return 0

    def step_node_applied(self, function, in_data):
        """Called, with functions, for each node applied in a step."""

    # -- GPU -----------------------------------------------------------------
    def gpu_backward_preprocess(self, function, in_data, out_grad):
        if self.paused:
            return
        self._mark = self.calls.events.record()

    def gpu_backward_postprocess(self, function, in_data, out_grad):
        if self.paused:
            return
        rec = self.tag_of(function) or self._outside()
        if rec is None:
            return
        stop = self.calls.events.record()
        self.calls.events.push(rec, self._mark, stop, backward=True)
        self._mark = self.calls.backward_mark = stop

    def use_gpu(self, gpu):
        """Times steps with CUDA events (``True``) or the host clock."""
        self.calls.events.resolve()
        self._mark = 0.0
        self._running = None
        self.use_method('backward_preprocess',
                        self.gpu_backward_preprocess if gpu else None)
        self.use_method('backward_postprocess',
                        self.gpu_backward_postprocess if gpu else None)
        if self.functions:  # no node's forward timed on a GPU
            del self._open[:]
            self.use_method('forward_preprocess',
                            self._tag_node if gpu else None)
            self.use_method('forward_postprocess',
                            self._untimed_forward if gpu else None)
        if self.steps is not None:
            self._use_span_methods(gpu)

    def _untimed_forward(self, function, in_data):
        pass

    # -- spans, while a Timeline records -------------------------------------
    def start_spans(self, steps, function_spans=None):
        """Appends a span to ``steps`` for each step charged, until
        :meth:`stop_spans`: the record charged (the ``owner``) and the
        clock reads (CUDA events) of its charge.

        Meanwhile ``backward_postprocess`` is an instance attribute over
        the class's, as the GPU methods are (:meth:`use_gpu`).  A step of
        ``F.forget`` is charged, and spanned, in pieces: before its inner
        steps, each inner step, after them.

        Args:
            steps (list): Where the :class:`~.spans.Span` go.
            function_spans (list): With functions, where the
                :class:`~.spans.FunctionSpan` of each node's forward and
                each step go.
        """
        self.steps = steps
        self.function_spans = function_spans
        self._use_span_methods(self.calls.gpu)

    def stop_spans(self):
        """Stops recording spans; safe to call when none are recorded."""
        self.steps = None
        self.function_spans = None
        self._use_span_methods(self.calls.gpu)

    def _use_span_methods(self, gpu):
        if self.steps is not None:
            method = (self._gpu_span_backward_postprocess if gpu
                      else self._span_backward_postprocess)
        else:
            method = self.gpu_backward_postprocess if gpu else None
        self.use_method('backward_postprocess', method)

    def _span_backward_postprocess(self, function, in_data, out_grad):
        # The class's postprocess, then the step's span
        # from the mark it started at to the mark it left.
        if self.paused:
            return
        start = self._mark
        type(self).backward_postprocess(self, function, in_data, out_grad)
        rec = self.tag_of(function) or self._outside()
        if rec is not None:
            self.steps.append(spans.Span(rec.charged, start, self._mark))
            if self.function_spans is not None:
                self.function_spans.append(spans.FunctionSpan(
                    rec.charged, function_record(rec.charged, function).name,
                    start, self._mark, True))

    def _gpu_span_backward_postprocess(self, function, in_data, out_grad):
        if self.paused:
            return
        start = self._mark
        type(self).gpu_backward_postprocess(
            self, function, in_data, out_grad)
        rec = self.tag_of(function) or self._outside()
        if rec is not None:
            self.steps.append(spans.Span(rec.charged, start, self._mark))


class OpenForward:
    """A node whose forward runs, timed by function type.

    Attributes:
        node (~chainer.FunctionNode): The node.
        one (~.records.FunctionRecord): Its type's record.
        start (float): When its forward started.
        charged (~.records.CallRecord): The call record charged.
        inner (float): Seconds of the nodes applied in its forward.
    """

    __slots__ = ('node', 'one', 'start', 'charged', 'inner')

    def __init__(self, node, one, start, charged):
        self.node = node
        self.one = one
        self.start = start
        self.charged = charged
        self.inner = 0.0


class FunctionTimer(BackwardTimer):
    """Backward timer splitting its figures by function type, each node's
    forward timed too (``TimerHook(functions=True)``)."""

    functions = True
    forward_preprocess = BackwardTimer._function_forward_preprocess
    forward_postprocess = BackwardTimer._function_forward_postprocess


def function_record(rec, function):
    """Returns the :class:`~.records.FunctionRecord` of ``function``'s type
    under the call record ``rec``, made when first asked for."""
    cls = type(function)
    if cls is FunctionAdapter:  # an old-style Function: its own class
        cls = type(function.function)
    functions = rec.functions
    one = None if functions is None else functions.get(cls)
    if one is None:
        one = records.function_record(rec, cls, cls.__name__)
    return one

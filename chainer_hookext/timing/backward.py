"""Backward time per link: :class:`BackwardTimer`, the function hook of a
:class:`~chainer_hookext.TimerHook` tagging each new node with the running
call record and charging each backward step to it; :class:`FunctionTimer`
splits the figures by function type too (docs/internals.md, "How backward
time is charged to links"; docs/timing.md, "Inside a link: time per
function type").
"""

from chainer.function import FunctionAdapter

from chainer_hookext import _chainer
from chainer_hookext import _frames
from chainer_hookext import _tagging
from chainer_hookext.timing import clock
from chainer_hookext.timing import records

from chainer_hookext.timing import spans


class BackwardTimer(_tagging.NodeTagger):
    """Function hook charging backward steps to a call stack's records;
    made by ``_tagging.new_tagger(BackwardTimer, calls, name)``.

    Args:
        calls (~.call_stack.CallStack): The stack whose running record tags
            the nodes.
        name (str): Base of its key in the thread's function hooks.
    """

    #: First in the thread's function hooks: the phase marks after it take
    #: its clock reads.
    first = True
    #: The loop's :class:`~.marks.PhaseMarks` during its update, else
    #: ``None``: given each step's reads, so that ``backward`` starts and
    #: ends where the steps' spans do (host clock only).
    marks = None
    functions = False  # whether split by function type (FunctionTimer)

    def __init__(self, calls, name):
        super().__init__(name)
        self.calls = calls
        self.bottom = calls.bottom
        self._mark = 0.0  # start of the running step: a time or an event
        self._running = None  # the node whose step runs, between pre / post
        self.steps = None  # spans of the steps, while recorded
        self._open = []  # OpenForward of running node forwards, innermost last
        self.function_spans = None  # spans of the nodes, while recorded
        # calls.outside_update() (then steps are nobody's), kept by the
        # loop's callback: reading the loop's own flag costs 30-40 ns more.
        self.paused = calls.outside_update()

    # -- hot path ----------------------------------------------------------
    def forward_preprocess(self, function, in_data):
        # The one place where a node of a timed link's forward is tagged: a
        # per-link figure counted per node goes here (docs/internals.md,
        # "Adding a per-link figure").
        rec = self.calls.top
        if rec is self.bottom:
            function._chainer_hookext_tag = (
                None if self._running is None
                else self._tag_in_step(function, in_data))
            return
        function._chainer_hookext_tag = rec
        if self.counts_flops:
            self.count_cost(rec.charged, function, in_data)

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
        return rec  # for the span method; Chainer ignores it

    def own_work_done(self, start, end):
        """Takes a pause of our own work (:mod:`.pauses`) out of the
        running step and node forwards (host clock only)."""
        if not self.calls.gpu:
            self._mark += end - start
            for opened in self._open:
                opened.start += end - start

    def nodes_read(self, function):
        """``function`` and the running step's node (:mod:`.._tagging`)."""
        running = self._running
        if running is None or running is function:
            return (function,)
        return (function, running)

    # -- F.forget ----------------------------------------------------------
    def _tag_in_step(self, function, in_data):
        # A node made in a step: the step's tag under F.forget, else none (a
        # gradient node; the step forgotten unless function types are timed).
        if not _chainer.is_recomputing():
            if not self.functions:
                self._running = None
            return None
        return self.tag_of(self._running)

    def forget_running(self):
        """Forgets a step (and node forwards) left running by an exception,
        at an update's start or end."""
        self._running = None
        del self._open[:]

    def _charge_running(self, t):
        # F.forget's step, before its inner steps; one that raised (no
        # postprocess: its end unknown) is dropped, told by the frames.
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
        # The current mode's bucket, or None when out of scope.
        train = self.calls.call_mode()
        if train is None:
            return None
        return self.calls.outside['train' if train else 'eval']

    #: Whether :meth:`count_cost` counts each node's FLOPs and bytes.
    counts_flops = False

    def count_cost(self, rec, function, in_data):
        """Charges the cost of a node of a timed link's forward to ``rec``
        (``FlopCounter``'s)."""

    _tag_node = forward_preprocess  # not hidden by FunctionTimer's

    # -- by function type (FunctionTimer's) ----------------------------------
    def _function_forward_preprocess(self, function, in_data):
        rec = self.calls.top
        if rec is self.bottom:
            return self._function_outside_links(function, in_data)
        rec = rec.charged
        flops = rec.flops
        self._tag_node(function, in_data)
        try:
            one = rec.functions[function.__class__]
        except (KeyError, TypeError):  # its first node here; none yet
            one = function_record(rec, function)
        one.flops += rec.flops - flops
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
        """The FLOPs of a node: 0 here, counted by ``FlopCounter``."""
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
        return rec

    def use_gpu(self, gpu):
        """Times steps with CUDA events (``True``) or the host clock."""
        self.calls.events.resolve()
        self._mark = 0.0
        self._running = None
        methods = [('backward_preprocess', self.gpu_backward_preprocess)]
        if self.functions:  # no node's forward timed on a GPU
            del self._open[:]
            methods += [('forward_preprocess', self._tag_node),
                        ('forward_postprocess', self._untimed_forward)]
        for name, method in methods:
            self.use_method(name, method if gpu else None)
        self._use_span_methods(gpu)

    def _untimed_forward(self, function, in_data):
        pass

    # -- spans, while a Timeline records -------------------------------------
    def start_spans(self, steps, function_spans=None):
        """Appends a :class:`~.spans.Span` to ``steps`` for each step
        charged (``F.forget``'s in pieces), and with functions a
        :class:`~.spans.FunctionSpan` to ``function_spans`` for each node's
        forward and step, until :meth:`stop_spans`;
        ``backward_postprocess`` is swapped meanwhile, as for the GPU."""
        swap = self.steps is not None and steps is not None
        self.steps = steps
        self.function_spans = function_spans
        if not swap:  # (a cut, per iteration: the same methods)
            self._use_span_methods(self.calls.gpu)

    def stop_spans(self):
        """Stops recording spans; safe to call when none are recorded."""
        self.start_spans(None)

    def _use_span_methods(self, gpu):
        if self.steps is not None:
            method = (self._gpu_span_backward_postprocess if gpu
                      else self._span_backward_postprocess)
        else:
            method = self.gpu_backward_postprocess if gpu else None
        self.use_method('backward_postprocess', method)

    def _span_backward_postprocess(self, function, in_data, out_grad):
        # The class's postprocess, then the step's span.
        start = self._mark
        rec = type(self).backward_postprocess(
            self, function, in_data, out_grad)
        if rec is not None:
            self.steps.append(spans.new_span((rec.charged, start, self._mark)))
            if self.function_spans is not None:
                self.function_spans.append(spans.FunctionSpan(
                    rec.charged, function_record(rec.charged, function).name,
                    start, self._mark, True))

    def _gpu_span_backward_postprocess(self, function, in_data, out_grad):
        start = self._mark
        rec = type(self).gpu_backward_postprocess(
            self, function, in_data, out_grad)
        if rec is not None:
            self.steps.append(spans.new_span((rec.charged, start, self._mark)))


class OpenForward:
    """A node whose forward runs, timed by function type: its type's record
    (``one``), the call record ``charged``, and ``inner``, the seconds of
    the nodes applied in its forward."""

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

    # The class's methods, not instance attributes over a BackwardTimer's:
    # those cost 10,900 instructions per function call over backward timing,
    # these 6,300 (benchmarks/README.md, "By function type").

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

"""FLOPs and bytes per link: the backward timer that also counts each node.

:class:`FlopCounter` is the :class:`~.timing.backward.BackwardTimer` of a
``TimerHook(flops=True)``.  Its ``forward_preprocess`` tags each new
function node as the timer's does, and charges the node's cost
(:func:`.flops.count`, from the inputs Chainer passes: no function runs
twice) to a call record of the timer:

* a node created in a timed link's forward: to the link's record, as its
  self cost (``flops``, ``bytes``);
* a node applied inside a backward step: a gradient node
  (``LinearGradWeight`` ...), or a node ``F.forget`` recomputes: to the
  record charged for that step's time, as backward self cost
  (``backward_flops``, ``backward_bytes``); a step of a node created
  outside every timed link, to the stack's ``outside`` record;
* a node created outside every timed link's forward: nothing (no forward
  time is reported for it either);
* under a trainer's loop, a node applied in a backward step outside the
  update (an extension's backward): nothing, as for the step's time.

A node class without a formula is counted in the record's ``unknown``
(``{class name: nodes}``), never as zero FLOPs.  Everything is added to
records, one per call path: nothing is kept per call.

Inside a backward step ``enable_backprop`` is off (unless double
backpropagation is asked for); otherwise the frames tell a step still
running from one that raised (:func:`.._frames.running_step`), which is
then forgotten.
"""

from chainer_hookext import _chainer
from chainer_hookext import _frames
from chainer_hookext.costs import flops
from chainer_hookext.timing import backward


class FlopCounter(backward.BackwardTimer):
    """Backward timer charging each node's FLOPs and bytes to a record.

    Make it with ``_tagging.new_tagger(FlopCounter, calls, name)``, as a
    :class:`~chainer_hookext.timing.backward.BackwardTimer`.
    """

    # -- hot path: a few hundred instructions per node, not calls ------------
    def forward_preprocess(self, function, in_data):
        rec = self.calls.top
        if rec is not self.bottom:  # a timed link's forward
            function._chainer_hookext_tag = rec
            rec = rec.charged
            cost = flops.count(function, in_data)
            if cost is None:
                self._add_unknown(rec, function)
                return
            rec.flops += cost.flops
            rec.bytes += cost.bytes
            return
        running = self._running
        if running is None or self.paused:
            # outside every timed link and step, or the trainer's update
            function._chainer_hookext_tag = None
            return
        try:
            tag = running._chainer_hookext_tag
        except AttributeError:  # created before the hook was registered
            tag = None
        recomputing, backprop = _chainer.step_flags()
        if recomputing:  # F.forget: its step's own nodes
            function._chainer_hookext_tag = tag
        else:  # a gradient node; or a step that raised: forgotten
            function._chainer_hookext_tag = None
            # Chainer turns enable_backprop off in a step, unless double
            # backprop is asked for: then the frames tell.
            if backprop and _frames.running_step() is not running:
                self._running = None
                return
        rec = self._outside() if tag is None else tag.charged
        if rec is None:
            return
        cost = flops.count(function, in_data)
        if cost is None:
            self._add_unknown(rec, function)
            return
        rec.backward_flops += cost.flops
        rec.backward_bytes += cost.bytes

    _tag_node = forward_preprocess

    # -- by function type (FunctionFlopCounter's) ----------------------------
    counts_flops = True

    def node_flops(self, function, in_data):
        """The FLOPs of a node, 0 without a formula (counted again: the
        formulas' results are memoized)."""
        cost = flops.count(function, in_data)
        return 0 if cost is None else cost.flops

    def step_node_applied(self, function, in_data):
        """Charges a node applied in a step to the step's type, as backward
        FLOPs."""
        running = self._running
        tag = self.tag_of(running)
        rec = self._outside() if tag is None else tag.charged
        if rec is not None:
            backward.function_record(rec, running).backward_flops += (
                self.node_flops(function, in_data))

    # -- slow path -----------------------------------------------------------
    @staticmethod
    def _add_unknown(rec, function):
        name = flops.name_of(function)
        if rec.unknown is None:
            rec.unknown = {}
        rec.unknown[name] = rec.unknown.get(name, 0) + 1


class FunctionFlopCounter(FlopCounter):
    """Flop counter splitting its figures by function type, each node's
    forward timed too (``TimerHook(flops=True, functions=True)``)."""

    functions = True
    forward_preprocess = backward.BackwardTimer._function_forward_preprocess
    forward_postprocess = backward.BackwardTimer._function_forward_postprocess

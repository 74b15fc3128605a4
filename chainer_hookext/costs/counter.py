"""FLOPs and bytes per link: the backward timer that also counts each node
when Chainer applies it, charged as its time is (docs/flops.md; the stages:
docs/internals.md, "Adding a per-link figure")."""

from chainer_hookext import _chainer
from chainer_hookext import _frames
from chainer_hookext.costs import flops
from chainer_hookext.timing import backward


class FlopCounter(backward.BackwardTimer):
    """Backward timer charging each node's FLOPs and bytes to a record;
    made with ``_tagging.new_tagger(FlopCounter, calls, name)``."""

    counts_flops = True

    # -- hot path: a few hundred instructions per node, not calls ------------
    def count_cost(self, rec, function, in_data):
        cost = flops.count(function, in_data)
        if cost is None:
            self._add_unknown(rec, function)
            return
        rec.flops += cost.flops
        rec.bytes += cost.bytes

    def _tag_in_step(self, function, in_data):
        # The timer's tag, and the node's cost charged as the step's
        # backward cost.
        if self.paused:  # outside the trainer's update
            return None
        running = self._running
        try:
            tag = running._chainer_hookext_tag
        except AttributeError:  # created before the hook was registered
            tag = None
        recomputing, backprop = _chainer.step_flags()
        # Chainer turns enable_backprop off in a step, unless double
        # backprop is asked for: then the frames tell a step that raised.
        if not recomputing and backprop and (
                _frames.running_step() is not running):
            self._running = None  # forgotten
            return None
        rec = self._outside() if tag is None else tag.charged
        if rec is not None:
            cost = flops.count(function, in_data)
            if cost is None:
                self._add_unknown(rec, function)
            else:
                rec.backward_flops += cost.flops
                rec.backward_bytes += cost.bytes
        return tag if recomputing else None

    # -- by function type (FunctionFlopCounter's) ----------------------------
    def node_flops(self, function, in_data):
        # 0 without a formula; counted again: the costs are memoized.
        cost = flops.count(function, in_data)
        return 0 if cost is None else cost.flops

    def step_node_applied(self, function, in_data):
        # A node applied in a step: the step's type's backward FLOPs.
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
    """Flop counter by function type (``TimerHook(flops=True,
    functions=True)``)."""

    functions = True
    forward_preprocess = backward.BackwardTimer._function_forward_preprocess
    forward_postprocess = backward.BackwardTimer._function_forward_postprocess

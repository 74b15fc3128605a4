"""The timer's call stack, where a link call's time is measured: a base
class of ``TimerHook``, whose own methods cost 390 instructions per link call
less than a held object's (benchmarks/README.md, "TimedLinks / TimerHook").
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext import _observer
from chainer_hookext import _frames
from chainer_hookext.timing import clock
from chainer_hookext.timing import link_paths
from chainer_hookext.timing import records
from chainer_hookext.timing import spans


#: A link in scope added to the model while timing, and its parent's name.
AddedLink = collections.namedtuple('AddedLink', ('name', 'parent'))


class _NoChildren(dict):
    # Every lookup gives _OUTERMOST, "called again": an outermost call takes
    # the slow path through a compare the hot path makes anyway.
    __slots__ = ()

    def __missing__(self, key):
        return _OUTERMOST


_OUTERMOST = records.CallRecord()
_OUTERMOST.last_end = float('inf')  # >= any start: the CPU check
_OUTERMOST.ended_in = None  # the bottom record's call_number: the GPU check


class CallStack:
    """The running link calls of one timer, and the live call trees.

    Attributes:
        outside (dict): By mode, the record of the backward steps of nodes
            created outside every timed call.
        link_names (dict): The hook's scope, ``{id(link): name}``, or
            ``None``; ``config_train``: its modes, as :meth:`call_mode` reads.
        parts: The trainer's ``IterationParts``, or ``None``.
    """

    parts = None

    def __init__(self):
        self.bottom = records.CallRecord()
        self.bottom.parent = self.bottom
        self.bottom.children = _NoChildren()
        self.top = self.bottom
        self.trees = {mode: records.CallRecord() for mode in records.MODES}
        self.outside = {mode: records.CallRecord() for mode in records.MODES}
        self.paths = link_paths.LinkPaths()
        self.added_links = []
        self.gpu = False
        self.thread = None
        self.events = clock.EventQueue(self._events_in_use)  # fwd and bwd
        self._last_event = None
        self.backward_mark = None  # the backward step's event to start from
        self._calls = 0  # calls started on a GPU: each call's number

    # -- hot path: runs twice per link call.  Invariant: within a timed call
    # every link call is pushed (out of scope ones marked); outside, none.
    def forward_preprocess(self, args):
        top = self.top
        try:
            rec = top.children[args.link]
        except KeyError:  # the first call of the link from this caller
            return self._enter(args.link)
        else:  # (no jump over the handler)
            if rec.last_end >= top.start:  # called again, or outermost
                return self._enter_again(args.link, rec)
            self.top = rec
            rec.start = clock.now()

    def forward_postprocess(self, args):
        t = clock.now()
        rec = self.top
        if rec.key is not args.link:
            rec = self._leave(args.link)
            if rec is None:
                return
        rec.elapsed += t - rec.start
        rec.count += 1
        rec.last_end = t
        self.top = rec.parent
        return rec  # for the span methods; Chainer ignores it

    def gpu_forward_preprocess(self, args):
        top = self.top
        try:
            rec = top.children[args.link]
        except KeyError:
            return self._enter(args.link)
        if rec.ended_in == top.call_number:
            return self._enter_again(args.link, rec)
        self.top = rec
        rec.start_event = self._last_event = self.events.record()
        rec.call_number = self._calls = self._calls + 1

    def gpu_forward_postprocess(self, args):
        rec = self.top
        if rec.key is not args.link:
            rec = self._leave(args.link)
            if rec is None:
                return
        stop = self._last_event = self.events.record()
        self.events.push(rec, rec.start_event, stop)
        rec.count += 1
        parent = self.top = rec.parent
        rec.ended_in = parent.call_number
        return rec

    # -- slow path ---------------------------------------------------------
    def _enter(self, link):
        top = self.top
        local = link in self.paths or top is self.bottom
        key = link if local else type(link)
        if top is not self.bottom:
            rec = top.children.get(key)
            if rec is None:  # a new call path, or calls left open
                top = self._prune(skip_current=True)
                if not local and self._refresh(link):
                    key = link
        if top is self.bottom:  # an outermost call: mode and scope read once
            names = self.link_names
            if names is not None and id(link) not in names:
                return
            train = self.call_mode()
            if train is None:
                return
            if _chainer.is_recomputing():  # F.forget: backward's work
                return
            gpu = clock.is_gpu(link)
            if gpu is not self.gpu:
                self._use_gpu(gpu)
            tree = self.trees['train' if train else 'eval']
            self.paths.add_root(link, override=False)
            key = link
        else:
            tree = top
        rec = tree.children.get(key)
        if rec is None:
            rec = tree.children[key] = self._new_record(link, key, top)
        self._push(rec)
        if top is self.bottom and train and self.parts is not None:
            marks = self.phase_marks()
            if marks is not None:  # a forward may start with this call
                marks.link_call_started(rec.start)

    def phase_marks(self):
        """The loop's phase marks taking this stack's reads, or ``None``."""
        return None

    def call_mode(self):
        """``True`` (train), ``False`` (eval) or ``None`` (not timed)."""
        parts = self.parts
        if parts is None:
            train = True if _chainer.is_train() else False
        elif parts.in_update:
            train = True
        elif parts.evaluator is not None:
            train = False
        else:
            return None
        mode = self.config_train
        if mode is not None and mode != train:
            return None
        return train

    def outside_update(self):
        """Returns whether a trainer's loop runs, but not its update."""
        parts = self.parts
        return parts is not None and not parts.in_update

    def _push(self, rec):
        self.top = rec
        if self.gpu:
            rec.start_event = self._last_event = self.events.record()
            rec.call_number = self._calls = self._calls + 1
        else:
            rec.start = clock.now()

    def _enter_again(self, link, rec):
        # A loop in the top's forward, or code that caught its exception:
        # the frames tell (1 us); a loop's code, once told, is trusted.
        top = self.top
        if top is self.bottom:  # an outermost call
            return self._enter(link)
        code = _frames.calling_code()
        if code is not top.loop_code:
            caller = _frames.calling_link()
            if caller is not top.key and type(caller) is not top.key:
                self._prune(skip_current=True)
                return self._enter(link)
            top.loop_code = code
        self._push(rec)

    def _leave(self, link):
        # The record to pop for a postprocess not the top link's, or None.
        rec = self.top
        if rec is self.bottom:
            return None
        if rec.key is not type(link):
            rec = self._prune(skip_current=False)
            if rec.key is not link and rec.key is not type(link):
                return None
        return rec

    def _refresh(self, link):
        # A layer may have been replaced: whether ``link`` is indexed now.
        if link.name is None:  # made in a forward: never part of the model
            return False
        names = self.link_names
        for new, parent, suffix in self.paths.refresh():
            if names is None or id(parent) not in names or id(new) in names:
                continue
            name = names[id(new)] = names[id(parent)] + suffix
            self.added_links.append(AddedLink(name, names[id(parent)]))
        return link in self.paths

    def _new_record(self, link, key, top):
        names = self.link_names
        if names is not None and id(link) not in names:
            return records.CallRecord(key, top, out_of_scope=True)
        path = self.paths.get(link)
        if path is None:  # not a descendant of a root: under its caller
            caller = top
            while caller.out_of_scope:
                caller = caller.parent
            parent = caller.labels.path.rstrip('/')
            path = f'{parent}/<{type(link).__name__}>'
        name = path if names is None else names[id(link)]
        return records.CallRecord(
            key, top, records.Labels(name, path, type(link).__name__))

    def _use_gpu(self, gpu):
        # Only while no call runs: the stack holds one kind of start.
        self.gpu = gpu
        _observer.use_method(self, 'forward_preprocess',
                             self.gpu_forward_preprocess if gpu else None)
        self.device_changed(gpu)
        self._use_span_methods()

    def device_changed(self, gpu):
        """Called when the calls are timed on a GPU (``gpu``) or not."""

    # -- spans, while a Timeline records -----------------------------------
    recording = None

    def start_spans(self, recording):
        """Appends a span to ``recording.forward`` per call in scope."""
        swap = self.recording is not None and recording.gpu is self.gpu
        self.recording = recording
        if not swap:  # (a cut, per iteration: the same methods)
            self._use_span_methods()

    def stop_spans(self):
        """Stops recording spans; safe to call when none are recorded."""
        self.recording = None
        self._use_span_methods()

    def _use_span_methods(self):
        recording = self.recording
        if recording is None:
            method = self.gpu_forward_postprocess if self.gpu else None
        else:
            if recording.gpu is not self.gpu:
                recording.use_gpu(self.gpu)
            method = (self._gpu_span_forward_postprocess if self.gpu
                      else self._span_forward_postprocess)
        _observer.use_method(self, 'forward_postprocess', method)

    # The class's postprocess, then the call's span (its start unchanged).
    def _span_forward_postprocess(self, args):
        rec = type(self).forward_postprocess(self, args)
        if rec is not None and not rec.out_of_scope:
            self.recording.forward.append(
                spans.new_span((rec, rec.start, rec.last_end)))

    def _gpu_span_forward_postprocess(self, args):
        rec = type(self).gpu_forward_postprocess(self, args)
        if rec is not None and not rec.out_of_scope:
            self.recording.forward.append(
                spans.new_span((rec, rec.start_event, self._last_event)))

    def paused(self, name, start, end):
        """Takes a pause out of every running call (not on a GPU)."""
        if not self.gpu:
            for rec in self._chain():
                rec.start += end - start

    # -- calls left open by exceptions (Chainer calls no postprocess for a
    # forward that raised): _prune ends them at a new path, a call again
    # or a postprocess not the top's.  Left: a child's first call from the
    # code that caught it is timed inside the raising link.
    def _chain(self):
        chain = []
        rec = self.top
        while rec is not self.bottom:
            chain.append(rec)
            rec = rec.parent
        chain.reverse()
        return chain

    def _prune(self, skip_current):
        chain = self._chain()
        keep = _frames.still_running([rec.key for rec in chain], skip_current)
        self._end_left_open(chain[keep:])
        self.top = chain[keep - 1] if keep else self.bottom
        return self.top

    def _end_left_open(self, calls):
        # Each counts up to the innermost's start or its last child's end.
        if not calls:
            return
        if self.gpu:
            for rec in calls:
                self.events.push(rec, rec.start_event, self._last_event)
                rec.count += 1
                rec.ended_in = rec.parent.call_number
            return
        end = max([calls[-1].start] + [
            child.last_end for child in calls[-1].children.values()])
        for rec in calls:
            rec.elapsed += end - rec.start
            rec.count += 1
            rec.last_end = end

    def _events_in_use(self):
        # None while a window's spans hold events.
        if self.recording is not None:
            return None
        return [self._last_event, self.backward_mark] + [
            rec.start_event for rec in self._chain()]

    def flush_calls(self):
        """Ends the calls left open and resolves the CUDA events."""
        if self.top is not self.bottom:
            self._prune(skip_current=False)
        self.events.resolve()

    def store(self, stored, forget_paths=True):
        """Ends every open call, moves the live trees into ``stored``."""
        self._end_left_open(self._chain())
        self.top = self.bottom
        self.events.resolve()
        for mode in records.MODES:
            records.merge(self.trees[mode], stored[mode], move=True)
            self.trees[mode] = records.CallRecord()
        if forget_paths:
            self.paths.clear()

"""The call stack of :class:`~chainer_hookext.TimerHook`: where time is taken.

``forward_preprocess`` looks the called link up among the children of the
running call (``self._top``) and pushes it; ``forward_postprocess`` pops.
Everything else (outermost calls, whose mode is read then; first calls of a
link under a caller; links out of scope; frames left by exceptions) goes to
the slow path :meth:`TimerStack._enter`, which runs a bounded number of
times per call path, or once per outermost call.

Invariant: within a timed call every link call is pushed, in scope or not
(out-of-scope ones as hidden records), so ``forward_postprocess`` pops
without checking which link it is.  Outside a timed call (``self._top is
self._idle``) nothing is pushed and a pop leaves the idle record in place.
A forward that raises leaves its records on the stack; the slow path finds
them when the next call misses, compares the stack with the
``Link.__call__`` frames still running and ends the stale ones.

With backward timing, a :class:`~._backward_timer.BackwardTimer` reads
``self._top`` to tag function nodes; nothing here changes for it but the
GPU switch, the resolution of events and the retirement of records.
"""

import sys
import time

import chainer

from chainer_hookext import _modes
from chainer_hookext.link_hooks import _backward_timer
from chainer_hookext.link_hooks import _cuda_timing
from chainer_hookext.link_hooks import _timer_tree
from chainer_hookext.link_hooks import scoped_link_hook


# Bound once: the hot path pays no module attribute lookup.
_perf_counter = time.perf_counter
_Record = _timer_tree.Record
_LINK_CALL = chainer.Link.__call__.__code__
# CUDA event pairs kept before the oldest half is resolved.
_MAX_PENDING = 1 << 14


class _NoChildren(dict):
    # Children of the idle record: every lookup gives None, so that each
    # outermost call takes the slow path (a plain subscript, cheaper than
    # dict.get, serves all other lookups).
    __slots__ = ()

    def __missing__(self, key):
        return None


class TimerStack(scoped_link_hook.ScopedLinkHook):
    """Base of :class:`~chainer_hookext.TimerHook`: timing, no reporting.

    Args:
        backward_name (str): Name under which :meth:`_add_backward`
            registers the function hook timing backward steps.
    """

    def __init__(self, backward_name=None):
        self._idle = _Record()
        self._idle.parent = self._idle
        self._idle.children = _NoChildren()
        self._top = self._idle
        # Call trees by mode, indexed by chainer.config.train: [eval, train].
        # Live trees are keyed by link, base trees by labels.
        self._live = [_Record(), _Record()]
        self._base = [_Record(), _Record()]
        self._paths = {}  # {link: path}, held only while registered
        self._gpu = False
        self._last_event = None
        self._pending = []  # (record, start event, stop event)
        # Backward of nodes created outside timed links: [eval, train].
        self._outside = [_Record(), _Record()]
        self._backward_name = backward_name
        self._backward = None  # the BackwardTimer while registered

    # -- hot path: keep it short, it runs twice per link call --------------
    def forward_preprocess(self, args):
        try:
            rec = self._top.children[args.link]
        except KeyError:  # the first call of the link from this caller
            return self._enter(args.link)
        if rec is None:  # an outermost call
            return self._enter(args.link)
        self._top = rec
        rec.start = _perf_counter()

    def forward_postprocess(self, args):
        t = _perf_counter()
        rec = self._top
        rec.elapsed += t - rec.start
        rec.count += 1
        self._top = rec.parent
        rec.start = t  # now the end of its last call (see _unwind)

    def _gpu_forward_preprocess(self, args):
        try:
            rec = self._top.children[args.link]
        except KeyError:
            return self._enter(args.link)
        if rec is None:
            return self._enter(args.link)
        self._top = rec
        rec.start = self._last_event = _cuda_timing.record_event()

    def _gpu_forward_postprocess(self, args):
        rec = self._top
        if rec is self._idle:
            return
        stop = self._last_event = _cuda_timing.record_event()
        self._pending.append((rec, rec.start, stop))
        rec.count += 1
        self._top = rec.parent
        if len(self._pending) >= _MAX_PENDING:
            self._resolve(_MAX_PENDING // 2)

    # -- backward timing (TimerHook.added / deleted) -------------------------
    def _add_backward(self):
        # One more registration of the backward timer.
        if self._backward is None:
            self._backward = _backward_timer.register(
                self, self._backward_name)
            if self._gpu:
                self._backward.use_gpu(True)
        else:
            self._backward.register()

    def _remove_backward(self):
        # Answers one _add_backward; the last one resolves and drops it.
        backward = self._backward
        if backward is None:
            return
        backward.unregister()
        if not backward.registered:
            backward.resolve()
            self._backward = None

    # -- slow path ---------------------------------------------------------
    def _enter(self, link):
        top = self._top
        if top is not self._idle:
            top = self._prune(skip_current=True)
        if top is self._idle:
            # An outermost call: read the mode here, once per root call.
            names = self.link_names
            if names is not None and id(link) not in names:
                return
            train = True if _modes.is_train() else False
            if self.mode is not None and self.mode != train:
                return
            gpu = _cuda_timing.is_gpu(link)
            if gpu is not self._gpu:
                self._use_gpu(gpu)
            tree = self._live[train]
        else:
            tree = top
        rec = tree.children.get(link)
        if rec is None:
            rec = tree.children[link] = self._new_record(link, top)
        self._top = rec
        if self._gpu:
            rec.start = self._last_event = _cuda_timing.record_event()
        else:
            rec.start = _perf_counter()

    def _new_record(self, link, top):
        names = self.link_names
        if names is not None and id(link) not in names:
            return _Record(link, top, hidden=True)
        path = self._paths.get(link)
        if path is None:
            caller = top
            while caller.hidden:
                caller = caller.parent
            prefix = ''
            if caller is not self._idle:
                prefix = '{}/<{}>'.format(
                    caller.labels[1].rstrip('/'), type(link).__name__)
            self._index(link, prefix, override=False)
            path = self._paths[link]
        name = path if names is None else names[id(link)]
        return _Record(link, top, (name, path, type(link).__name__))

    def _index(self, root, prefix, override):
        for path, link in root.namedlinks():
            path = (prefix or '/') if path == '/' else prefix + path
            if override or link not in self._paths:
                self._paths[link] = path

    def _use_gpu(self, gpu):
        # Only while idle: the stack holds one kind of start.
        self._gpu = gpu
        if gpu:
            self.forward_preprocess = self._gpu_forward_preprocess
            self.forward_postprocess = self._gpu_forward_postprocess
        else:
            del self.forward_preprocess
            del self.forward_postprocess
        if self._backward is not None:
            self._backward.use_gpu(gpu)

    def _chain(self):
        chain = []
        rec = self._top
        while rec is not self._idle:
            chain.append(rec)
            rec = rec.parent
        chain.reverse()
        return chain

    def _prune(self, skip_current):
        # Ends the calls on the stack whose Link.__call__ is no longer
        # running (a forward raised): Chainer calls no postprocess for them.
        chain = self._chain()
        live = iter(_live_links(skip_current))
        keep = 0
        for rec in chain:
            if not any(link is rec.link for link in live):
                break
            keep += 1
        self._unwind(chain[keep:])
        self._top = chain[keep - 1] if keep else self._idle
        return self._top

    def _unwind(self, stale):
        # A stale call counts, with the time up to the last event inside it.
        if not stale:
            return
        if self._gpu:
            for rec in stale:
                self._pending.append((rec, rec.start, self._last_event))
                rec.count += 1
            return
        # The last event inside: the start of the innermost stale call or
        # the end of its last finished child (a popped record's start).
        end = max([stale[-1].start] + [
            child.start for child in stale[-1].children.values()
            if isinstance(child.start, float)])  # not a CUDA event
        for rec in stale:
            rec.elapsed += end - rec.start
            rec.count += 1

    def _resolve(self, n=None):
        # The first n (all) forward events; with n=None, backward ones too.
        pending = self._pending
        if n is None and self._backward is not None:
            self._backward.resolve()
        n = len(pending) if n is None else n
        for rec, start, stop in pending[:n]:
            rec.elapsed += max(_cuda_timing.elapsed(start, stop), 0.0)
        del pending[:n]

    def _retire(self, keep_state=True, keep_paths=False):
        # Folds (or drops) the link-keyed trees into the label-keyed ones:
        # afterwards the hook refers to no link.
        self._unwind(self._chain())
        self._top = self._idle
        self._resolve()
        for train in (True, False):
            # Retired records stay reachable from the tags of function
            # nodes still alive: they drop their links and pass later
            # backward charges on to the records they are merged into.
            _timer_tree.merge(
                self._live[train],
                self._base[train] if keep_state else _Record(), retire=True)
            self._live[train] = _Record()
        if not keep_paths:
            self._paths.clear()

    def _merged(self, trains):
        # One label-keyed tree of everything timed in the given modes.
        if self._top is not self._idle:
            self._prune(skip_current=False)
        self._resolve()
        root = _Record()
        for train in trains:
            _timer_tree.merge(self._base[train], root)
            _timer_tree.merge(self._live[train], root)
        return root


def _live_links(skip_current):
    # Links whose Link.__call__ is running in this thread, outermost first.
    links = []
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _LINK_CALL:
            links.append(frame.f_locals.get('self'))
        frame = frame.f_back
    if skip_current and links:
        del links[0]
    links.reverse()
    return links

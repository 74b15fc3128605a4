"""The bytes alive through chosen iterations, by category (docs/memory.md,
"Memory over the iteration").

Each followed buffer is one :class:`Change` when found and one when freed;
a :class:`Sample` at each link call's and backward step's end counts the
changes so far.
"""

import collections
import itertools
import weakref

import chainer
from chainer.backends import cuda
import numpy

from chainer_hookext import _chainer
from chainer_hookext import _registry
from chainer_hookext import _running_links
from chainer_hookext.memory import buffers
from chainer_hookext.memory import figures
from chainer_hookext.memory import graph
from chainer_hookext.memory import pool as pool_hooks
from chainer_hookext.report import keys

#: The categories of bytes followed, in the order they are stacked.
CATEGORIES = ('params', 'grads', 'optimizer_state', 'activations')

#: A buffer found (``nbytes`` > 0) or freed (< 0); ``holder``: the
#: innermost link, ``top``: the top-level link.
Change = collections.namedtuple(
    'Change', ('category', 'holder', 'top', 'nbytes'))

#: ``kind``: ``'forward'``, ``'backward'`` or ``'end'``; ``where``: the link,
#: function type or iteration; ``span``: ``(recording, index)`` that ended
#: then, or ``None``; ``pool_*``: the CuPy pool's bytes (``None`` on a CPU).
Sample = collections.namedtuple('Sample', (
    'kind', 'where', 'changes', 'span', 'pool_used', 'pool_held'))

#: The bytes alive at a sample; ``tops``: activations per top-level link.
Point = collections.namedtuple(
    'Point', ('sample', 'total', 'categories', 'tops'))

#: The highest point, its largest ``holders``, ``pool`` the pool's peak of
#: used bytes (GPU), ``forget`` (:class:`ForgetSaving`) most first.
Peak = collections.namedtuple(
    'Peak', ('point', 'holders', 'pool', 'forget'), defaults=((),))

Holder = collections.namedtuple('Holder', ('category', 'link', 'nbytes'))

#: ``F.forget`` around ``link`` lowers the peak by ``nbytes`` to ``peak``.
ForgetSaving = collections.namedtuple(
    'ForgetSaving', ('link', 'nbytes', 'peak'))

#: The most links a :class:`Peak`'s ``forget`` names.
FORGET_TOP = 5

# A namedtuple with no Python frame (``__new__`` is one): several per node.
_tuple = tuple.__new__


class _Followed(weakref.ref):
    # A followed buffer's owner, with its key, Change and the Change's index.
    __slots__ = ('key', 'change', 'index')


class MemoryTimeline:
    """The bytes alive through the iterations it records.

    Args:
        model (dict): ``{id(link): (name, link)}`` of the model's links.
        recorder: Its ``links``, the Timeline's current ``Recording`` or
            ``None``, names the span each sample ends.
        forget (bool): Follow the links' outputs (:func:`forget_savings`).
    """

    def __init__(self, model, recorder=None, forget=True):
        self.model = model
        self.recorder = recorder
        self.forget = forget
        self.changes = []
        self.samples = []
        #: ``{index of a freeing Change: index of the Change finding it}``.
        self.freed = {}
        #: ``{index of a found Change: [links whose call returned it]}``.
        self.outputs = {}
        #: ``{(index, link)}``: an output of ``link`` kept by a node outside.
        self.kept_outside = set()
        self.pool_peak = None
        self._alive = {}  # {buffer key: its _Followed}
        # {buffer key: weakref}, not counted (a WeakValueDictionary is slower)
        self._excluded = {}
        self._outputs = {}  # {buffer key: [links]} of live link outputs
        self._running = None  # the thread's RunningLinks, while it records
        self.link_names = {key: name for key, (name, _) in model.items()}
        self._pending = []  # weakrefs of nodes not read yet
        # {id(param.node): (param, owner, nbytes, Change index)}: gradients
        # not set yet (_settle_grads)
        self._virtual = {}
        self._steps = 0  # backward steps running
        self._handles = None
        self._pool = None
        self._roots = []  # [(name, link)] holding every other link
        self._params = []  # [(parameter, owner's name, id(its node))]
        self._param_nodes = {}  # {id(its variable node): (param, owner)}

    def __reduce__(self):
        # A copy records nothing: its refs, hooks and ids are this object's.
        return MemoryTimeline, ({},)

    @property
    def recording(self):
        """Whether its hooks are registered."""
        return self._handles is not None

    def start(self):
        """Registers its hooks; the model's bytes are found now."""
        if self._handles is not None:
            return
        links = [link for _, link in self.model.values()]
        owners = {id(param): name for name, link in self.model.values()
                  for param in link.params(include_uninit=True)}
        # Each parameter once: from the links no other link holds.
        self._roots = [(name, link) for name, link in self.model.values()
                       if not any(name.startswith(other + '/')
                                  for other in self.link_names.values())]
        self._params = [
            (param, owners.get(id(param), name), id(param.node))
            for name, link in self._roots
            for param in link.params(include_uninit=True)]
        self._param_nodes = {node: (param, owner)
                             for param, owner, node in self._params}
        self._find_model()
        for array in graph.attribute_arrays(links) + [  # and persistents
                getattr(link, name, None) for link in links
                for name in _chainer.persistent_names(link)]:
            self._exclude(array)
        self._pool = _PoolCounter() if pool_hooks.on_gpu(links) else None
        self._running = _running_links.subscribe(self)
        self._handles = [
            (_registry.add(hooks, hook), hook) for hooks, hook in (
                (_chainer.link_hooks(), _LinkListener(self)),
                (chainer.get_function_hooks(), _FunctionListener(self)))]

    def stop(self):
        """Removes its hooks; safe to call again."""
        handles, self._handles = self._handles, None
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            self.pool_peak = pool.peak
        for followed in self._alive, self._excluded, self._outputs:
            followed.clear()  # the callbacks die with their references
        self._running = _running_links.unsubscribe(self._running, self)
        self._pending, self._virtual = [], {}
        self._params, self._param_nodes = [], {}
        for handle, hook in handles or ():
            _registry.remove(handle, hook)

    def iteration_ended(self, number):
        """Finds what the optimizer made, then samples (``'end'``)."""
        if self._pending:
            self._read_nodes(self._running_call())
        settled = self._settle_grads() if self._virtual else ()
        self._find_model(settled)
        self.sample('end', number, None)

    def _find(self, array, category, holder, top):
        # A followed key's id is its owner's while the owner lives
        # (benchmarks/README.md, "Memory timeline").
        alive = self._alive
        key = id(array)
        if key not in alive:
            if type(array) is numpy.ndarray and array.base is None:
                owner, nbytes = array, array.nbytes  # owner_of's first case
            else:
                found = buffers.owner_of(array)
                if found is None:
                    return
                owner, nbytes = found
            key = id(owner)
            if key not in alive:
                if key in self._excluded:
                    return
                try:
                    ref = _Followed(owner, self._freed)
                except TypeError:  # a buffer no reference can follow
                    return
                ref.key = key
                ref.change = change = _tuple(
                    Change, (category, holder, top, nbytes))
                ref.index = len(self.changes)
                alive[key] = ref
                self.changes.append(change)
                return
        if key in self._outputs:  # a link's output kept again
            self._kept_again(key, holder)

    def _kept_again(self, key, holder):
        index = self._alive[key].index
        for link in self._outputs[key]:
            if not _within(holder, link):
                self.kept_outside.add((index, link))

    def _output(self, array, link):
        found = buffers.owner_of(array)
        if found is None or id(found[0]) not in self._alive:
            return
        key = id(found[0])
        index = self._alive[key].index
        links = self._outputs.setdefault(key, [])
        if link not in links:
            links.append(link)
            self.outputs.setdefault(index, []).append(link)

    def _exclude(self, array):
        found = buffers.owner_of(array)
        if found is None:
            return
        key = id(found[0])
        excluded = self._excluded
        if key not in self._alive and key not in excluded:
            try:
                excluded[key] = weakref.ref(
                    found[0], lambda _, key=key: excluded.pop(key, None))
            except TypeError:
                pass

    def _freed(self, ref):
        key = ref.key
        if self._alive.get(key) is not ref:  # not followed any more
            return
        del self._alive[key]
        change = ref.change
        if self.forget:
            self._outputs.pop(key, None)
            self.freed[len(self.changes)] = ref.index
        self.changes.append(_tuple(Change, (
            change.category, change.holder, change.top, -change.nbytes)))

    def _find_model(self, settled=()):
        # _find's first test inline; ``settled`` grads are followed already.
        find, alive = self._find, self._alive
        for param, owner, node in self._params:
            array = param.raw_array
            if array is None:  # no gradient or state to read either
                continue
            if id(array) not in alive:
                find(array, 'params', owner, owner)
            if node not in settled:
                grad = param.grad
                if grad is not None and id(grad) not in alive:
                    find(grad, 'grads', owner, owner)
            for array in figures.state_arrays(param):
                if id(array) not in alive:
                    find(array, 'optimizer_state', owner, owner)

    def _running_call(self):
        calls = self._running.calls
        return calls[-1] if calls else None

    def _read_nodes(self, call):
        # The nodes made since the last read, inside ``call`` (or None).
        pending, self._pending = self._pending, []
        holder, top = self._holder(call)
        alive, outputs, find = self._alive, self._outputs, self._find
        for ref in pending:
            node = ref()
            if node is None:
                continue
            if call is None:  # labels given to a loss outside every link
                for array in buffers.leaf_arrays(node):
                    self._exclude(array)
            for array in buffers.kept_arrays(node):
                key = id(array)
                if key not in alive:  # _find's own first test, inline
                    find(array, 'activations', holder, top)
                elif key in outputs:
                    self._kept_again(key, holder)

    def _settle_grads(self):
        # Chainer sets leaf gradients at the backward's end: a stand-in of
        # the parameter's size until then; the same size takes its place.
        virtual, self._virtual = self._virtual, {}
        alive, changes = self._alive, self.changes
        for param, owner, nbytes, index in virtual.values():
            grad = param.grad
            found = None if grad is None else buffers.owner_of(grad)
            if found is not None and found[1] == nbytes and (
                    id(found[0]) not in alive) and (
                    id(found[0]) not in self._excluded):
                try:
                    ref = _Followed(found[0], self._freed)
                except TypeError:
                    pass
                else:
                    ref.key, ref.change, ref.index = (
                        id(found[0]), changes[index], index)
                    alive[ref.key] = ref
                    continue
            changes.append(_tuple(Change, ('grads', owner, owner, -nbytes)))
            if grad is not None:
                self._find(grad, 'grads', owner, owner)
        return virtual  # keyed by the parameters' nodes' ids

    def sample(self, kind, where, spans=None):
        """Takes a :class:`Sample`, unless nothing changed (but at an end)."""
        pool = self._pool
        samples = self.samples
        changes = len(self.changes)
        if kind != 'end' and samples and samples[-1].changes == changes and (
                pool is None or samples[-1].pool_used == pool.used):
            return
        if spans is None and kind != 'end' and self.recorder is not None:
            recording = self.recorder.links  # the span of ``kind`` ended
            ended = None if recording is None else getattr(recording, kind)
            if ended:
                spans = recording, len(ended) - 1
        samples.append(_tuple(Sample, (
            kind, where, changes, spans,
            None if pool is None else pool.used,
            None if pool is None else pool.held())))

    def _holder(self, call):
        # The innermost model link (else the path) and the top-level one.
        if call is None:
            return keys.OUTSIDE, keys.OUTSIDE
        holder = self._name(call)
        if call.parent is None:
            return holder, holder
        top = call
        while top.parent.parent is not None:
            top = top.parent
        return holder, self._name(top)

    def _name(self, call):
        names = self.link_names
        running = call
        while running is not None:
            name = names.get(id(running.link))
            if name is not None:
                return name
            running = running.parent
        return call.path

    def link_started(self, args):
        call = self._running.enter(args)  # (another listener's, maybe)
        if self._pending:
            self._read_nodes(call.parent)
        if self._virtual and not self._steps:
            self._settle_grads()
        if call.parent is None:  # the batch: made outside the graph
            for arg in list(args.args) + list(args.kwargs.values()):
                if isinstance(arg, chainer.Variable):
                    if arg.creator_node is not None:
                        continue
                    arg = arg.raw_array
                if buffers.is_array(arg):
                    self._exclude(arg)

    def link_ended(self, args):
        call = self._running.leave(args)  # (another listener's, maybe)
        if self._pending:
            self._read_nodes(call)
        if self._virtual and not self._steps:
            self._settle_grads()
        if call is None:
            name = type(args.link).__name__
        else:  # _name's first look-up, inline
            name = self.link_names.get(id(args.link))
            if name is None:
                name = self._name(call)
        if self.forget:
            out = args.out
            if isinstance(out, chainer.Variable):
                self._output(out.raw_array, name)
            elif isinstance(out, (tuple, list)):
                for variable in out:
                    if isinstance(variable, chainer.Variable):
                        self._output(variable.raw_array, name)
        self.sample('forward', name)

    def node_created(self, function, in_data):
        if not self._steps:
            self._pending.append(weakref.ref(function))

    def step_started(self, function, in_data, out_grad):
        # No _settle_grads: gradients are not set between two steps.
        if not self._steps and self._pending:
            self._read_nodes(self._running_call())
        self._steps += 1

    def step_ended(self, function, in_data, out_grad):
        self._steps -= 1
        virtual, nodes = self._virtual, self._param_nodes
        for x in function.inputs:
            key = id(x)
            entry = nodes.get(key)
            if entry is not None and key not in virtual and x.requires_grad:
                param, owner = entry
                nbytes = param.raw_array.nbytes
                virtual[key] = param, owner, nbytes, len(self.changes)
                self.changes.append(
                    _tuple(Change, ('grads', owner, owner, nbytes)))
        self.sample('backward', type(function).__name__)


class _LinkListener(chainer.LinkHook):
    # The timeline's own methods as attributes: one call per event.

    name = 'MemoryTimeline'

    def __init__(self, timeline):
        self.forward_preprocess = timeline.link_started
        self.forward_postprocess = timeline.link_ended


class _FunctionListener(chainer.FunctionHook):
    name = 'MemoryTimeline'

    def __init__(self, timeline):
        self.forward_postprocess = timeline.node_created
        self.backward_preprocess = timeline.step_started
        self.backward_postprocess = timeline.step_ended


class _PoolCounter:
    """The CuPy pool's used bytes and their peak."""

    def __init__(self):
        self.pool = cuda.cupy.get_default_memory_pool()
        self.used = self.peak = self.pool.used_bytes()
        self._hook = pool_hooks.new_pool_hook(
            self, 'chainer_hookext.MemoryTimeline')
        self._hook.__enter__()

    def allocated(self, size):
        self.used += size
        if self.used > self.peak:
            self.peak = self.used

    def freed(self, size):
        self.used -= size

    def held(self):
        return self.pool.total_bytes()

    def stop(self):
        hook, self._hook = self._hook, None
        if hook is not None:
            hook.__exit__(None, None, None)


def where_of(sample):
    """Returns where ``sample`` was taken (``'iteration N'`` at an end)."""
    return (f'iteration {sample.where}' if sample.kind == 'end'
            else str(sample.where))


def points(timeline):
    """Returns a :class:`Point` per sample (unchanged ones share dicts)."""
    categories, tops, out = dict.fromkeys(CATEGORIES, 0), {}, []
    total = done = 0
    changes = timeline.changes
    shown, shown_tops = dict(categories), {}
    for sample in timeline.samples:
        end = sample.changes
        if end != done:
            for category, _, top, nbytes in changes[done:end]:
                categories[category] += nbytes
                total += nbytes
                if category == 'activations':
                    tops[top] = tops.get(top, 0) + nbytes
            done = end
            shown = dict(categories)
            shown_tops = {top: n for top, n in tops.items() if n}
        out.append(Point(sample, total, shown, shown_tops))
    return out


def peak_of(timeline, top=5):
    """Returns the :class:`Peak` at the first highest total (on a GPU, pool
    used bytes), or ``None`` without a sample."""
    found = points(timeline)
    if not found:
        return None
    gpu = found[0].sample.pool_used is not None
    point = max(found, key=lambda p: p.sample.pool_used if gpu else p.total)
    return Peak(point, _holders(timeline, point.sample, top),
                timeline.pool_peak, forget_savings(timeline, found, gpu))


def _holders(timeline, sample, top):
    held = collections.Counter()
    for change in timeline.changes[:sample.changes]:
        held[change.category, change.holder] += change.nbytes
    return sorted((Holder(c, h, n) for (c, h), n in held.items() if n > 0),
                  key=lambda x: -x.nbytes)[:top]


def _within(holder, link):
    return holder == link or holder.startswith(link + '/')


def forget_savings(timeline, found, gpu=False):
    """Returns the :class:`ForgetSaving` of the links whose ``F.forget``
    lowers the peak, most first (docs/memory.md, "The peak").

    Args:
        timeline (MemoryTimeline): A recorded timeline.
        found (list): Its :func:`points`.
        gpu (bool): The totals are the pool's used bytes.
    """
    # Not the outermost links, as LinkMemory's candidates.
    roots = {name for name, _ in timeline._roots}
    holders = {change.holder for change in timeline.changes
               if change.category == 'activations'} - {keys.OUTSIDE}
    # {holder: [it and the links holding it], roots left out}
    above = {holder: [link for link in itertools.accumulate(
        holder.split('/'), lambda a, b: f'{a}/{b}') if link not in roots]
        for holder in holders}
    links = {link for chain in above.values() for link in chain}
    if not found or not links:
        return []
    removable = dict.fromkeys(links, 0)  # bytes alive now
    highest = dict.fromkeys(links, 0)  # the highest total left
    done = 0
    changes = timeline.changes
    for point in found:
        sample = point.sample
        for index in range(done, sample.changes):
            change = changes[index]
            if change.category != 'activations':
                continue
            found_at = timeline.freed.get(index, index)
            for link in above.get(change.holder, ()):
                if (found_at, link) not in timeline.kept_outside:
                    removable[link] += change.nbytes
        done = sample.changes
        total = sample.pool_used if gpu else point.total
        for link in links:
            highest[link] = max(highest[link], total - removable[link])
    peak = max(p.sample.pool_used if gpu else p.total for p in found)
    return sorted((ForgetSaving(link, peak - left, left)
                   for link, left in highest.items() if left < peak),
                  key=lambda s: (-s.nbytes, s.link))[:FORGET_TOP]


#: A trace moment: ``seconds`` on the spans' clock and the ``{name: bytes}``
#: that changed then (all at the first).
Moment = collections.namedtuple(
    'Moment', ('seconds', 'categories', 'tops', 'pool'))

#: A window trace's moments, ``peak`` (no ``forget``) and ``peak_seconds``.
Recorded = collections.namedtuple(
    'Recorded', ('moments', 'peak', 'peak_seconds'))


def recorded(timeline, iteration_starts, end, top=5):
    """Returns the :class:`Recorded` of a window's ``timeline``, in one pass.

    Args:
        timeline (MemoryTimeline): A recorded timeline.
        iteration_starts (list): ``[(number, start)]`` of the window.
        end (float): When the window's last iteration ended.
        top (int): The peak's holders named.
    """
    ends = {number: stop for (number, _), (_, stop) in zip(
        iteration_starts, list(iteration_starts[1:]) + [(None, end)])}
    changes = timeline.changes
    categories = dict.fromkeys(CATEGORIES, 0)
    tops = dict.fromkeys(sorted({change.top for change in changes
                                 if change.category == 'activations'}), 0)
    # What changed since the last moment drawn; the first draws all.
    changed, changed_tops, pool = dict(categories), dict(tops), {}
    used = held = peak = peak_seconds = None
    total = done = 0
    moments, highest = [], -1
    for sample in timeline.samples:
        kind, where, stop, span, pool_used, pool_held = sample
        if stop != done:
            for category, _, top_link, nbytes in changes[done:stop]:
                value = changed[category] = categories[category] + nbytes
                categories[category] = value
                if category == 'activations':
                    value = changed_tops[top_link] = tops[top_link] + nbytes
                    tops[top_link] = value
            done = stop
            total = sum(categories.values())
        if kind == 'end':
            seconds = ends.get(where)
        else:  # the end of the span the sample ended, if any
            seconds = span and getattr(span[0], kind)[span[1]].end
        if pool_used is None:
            value = total
        else:
            value = pool_used
            if value != used:
                pool['used'] = used = value
            if pool_held != held:
                pool['held'] = held = pool_held
        if value > highest:  # the first of the highest
            highest, peak_seconds = value, seconds
            peak = Point(sample, total, dict(categories),
                         {t: n for t, n in tops.items() if n})
        if seconds is not None and (changed or changed_tops or pool):
            moments.append(_tuple(Moment, (
                seconds, changed, changed_tops, pool)))
            changed, changed_tops, pool = {}, {}, {}
    if peak is not None:
        peak = Peak(peak, _holders(timeline, peak.sample, top),
                    timeline.pool_peak)
    return Recorded(moments, peak, peak_seconds)

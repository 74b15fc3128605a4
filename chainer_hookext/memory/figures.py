"""Each link's memory figures (:class:`LinkFigures`), from a measured
iteration and the model (docs/memory.md).
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext.memory import buffers
from chainer_hookext.memory import graph
from chainer_hookext.report import keys


#: One link's memory in bytes (docs/memory.md, "Keys"); ``peak`` and
#: ``backward_peak``: ``None`` on a CPU; ``forward_time``: seconds or ``None``.
LinkFigures = collections.namedtuple('LinkFigures', (
    'key', 'parent', 'activations', 'self_activations', 'forgettable',
    'params', 'grads', 'optimizer_state', 'peak', 'backward_peak',
    'forward_time'))

#: The byte figures of a :class:`LinkFigures`, in table and report order.
FIELDS = ('activations', 'self_activations', 'forgettable', 'params',
          'grads', 'optimizer_state', 'peak', 'backward_peak')


def model_bytes(link):
    """Returns ``(params, grads, optimizer_state)`` bytes of ``link``'s
    parameters, each buffer once."""
    seen = set()
    totals = [0, 0, 0]
    for param in link.params(include_uninit=False):
        state = state_arrays(param)
        for i, arrays in enumerate(((param.array,), (param.grad,), state)):
            for array in arrays:
                buffer = buffers.buffer_of(array)
                if buffer is not None and buffer.key not in seen:
                    seen.add(buffer.key)
                    totals[i] += buffer.nbytes
    return tuple(totals)


def link_figures(links, tracer):
    """Returns the :class:`LinkFigures` of each of ``links`` (``(name,
    link)``, parents first), then of ``(outside)``, from a
    :class:`~.tracer.MemoryTracer`."""
    own, parents, gpu = tracer.activations or {}, tracer.parents, tracer.gpu
    inclusive = collections.defaultdict(int)
    backward_peak = {}
    for name, _ in links:  # self figures up the callers
        for ancestor in graph.callers(name, parents):
            inclusive[ancestor] += own.get(name, 0)
            peak = tracer.backward_peak.get(name)
            if peak is not None and peak > backward_peak.get(ancestor, -1):
                backward_peak[ancestor] = peak
    out = []
    for name, link in links:
        params, grads, state = model_bytes(link)
        out.append(LinkFigures(
            key=name, parent=parents.get(name), activations=inclusive[name],
            self_activations=own.get(name, 0),
            forgettable=tracer.forgettable.get(name, 0), params=params,
            grads=grads, optimizer_state=state,
            peak=tracer.forward_peak.get(name, 0) if gpu else None,
            backward_peak=backward_peak.get(name, 0) if gpu else None,
            forward_time=tracer.forward_time.get(name)))
    outside = own.get(None, 0)
    out.append(LinkFigures(
        key=keys.OUTSIDE, parent=None, activations=outside,
        self_activations=outside, forgettable=None, params=0, grads=0,
        optimizer_state=0, peak=None, forward_time=None,
        backward_peak=tracer.backward_peak.get(None, 0) if gpu else None))
    return out


#: A link worth wrapping in ``F.forget``: bytes freed per forward ms.
Candidate = collections.namedtuple(
    'Candidate', ('key', 'forgettable', 'forward_time', 'bytes_per_ms'))


def forget_candidates(rows, times=None, top=3):
    """Returns the ``top`` :class:`Candidate` s of ``rows``, best first:
    not the outermost links nor ``(outside)``, nor links freeing nothing or
    not timed.  ``times``: ``{name: forward seconds}`` to use instead of
    the rows' ``forward_time``."""
    timed = ((row, row.forward_time if times is None else times.get(row.key))
             for row in rows
             if row.key != keys.OUTSIDE and row.parent is not None)
    found = [Candidate(row.key, row.forgettable, seconds,
                       row.forgettable / (seconds * 1e3))
             for row, seconds in timed if row.forgettable and seconds]
    return sorted(found, key=lambda c: -c.bytes_per_ms)[:top]


def state_arrays(param):
    """Returns ``param``'s update rule's ``state`` arrays and float32 copy."""
    rule = param.update_rule
    arrays = [] if rule is None or rule.state is None else list(
        rule.state.values())
    master = getattr(rule, _chainer.UPDATE_RULE_FP32_MASTER, None)
    if master is not None:
        arrays.append(master.array)
    return arrays

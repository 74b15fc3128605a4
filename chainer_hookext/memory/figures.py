"""Each link's memory figures (:class:`LinkFigures`), from a measured
iteration and the model (docs/memory.md).
"""

import collections

from chainer_hookext import _chainer
from chainer_hookext.memory import buffers
from chainer_hookext.memory import graph
from chainer_hookext.report import keys


#: One link's memory, in bytes.  ``activations``: kept for backward by the
#: nodes its forward created, child links included; ``self_activations``:
#: by the nodes it created itself; ``forgettable``: what ``F.forget``
#: around its calls would free (kept by its nodes only, less its inputs);
#: ``params``, ``grads``,
#: ``optimizer_state`` (the update rules' state and float32 master
#: copies): of its parameters, child links' included;
#: ``peak`` and ``backward_peak``: on a GPU, the pool's live-bytes peak
#: above the start of its forward (the largest over its calls) and of a
#: backward step of its nodes, child links included (``None`` on a CPU);
#: ``forward_time``: seconds of its forward in the measured iteration
#: (``None`` when not measured).
LinkFigures = collections.namedtuple('LinkFigures', (
    'key', 'parent', 'activations', 'self_activations', 'forgettable',
    'params', 'grads',
    'optimizer_state', 'peak', 'backward_peak', 'forward_time'))

#: The byte figures of a :class:`LinkFigures`, in table and report order.
FIELDS = ('activations', 'self_activations', 'forgettable', 'params',
          'grads',
          'optimizer_state', 'peak', 'backward_peak')
#: Those measured on a GPU only.
GPU_FIELDS = ('peak', 'backward_peak')


def model_bytes(link):
    """Returns ``(params, grads, optimizer_state)`` bytes of ``link``'s
    parameters, child links' included, each buffer once.

    The optimizer state is the update rules' ``state`` and, for a rule
    updating in float32 (``use_fp32_update``), its float32 copy of the
    parameter."""
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
    """Returns the :class:`LinkFigures` of each link, then of ``(outside)``.

    Args:
        links (list): ``(name, link)`` of the links in scope, parents first.
        tracer (~.tracer.MemoryTracer): What the measured iteration gave
            (its ``activations`` may be ``None``: no backward was seen).

    Returns:
        list of LinkFigures: One per link in ``links`` order, then the
        ``(outside)`` row.
    """
    own = tracer.activations or {}
    parents = {name: parent for name, parent in tracer.parents.items()}
    inclusive = collections.defaultdict(int)
    backward_peak = {}
    for name, _ in links:  # each link's self figures up its callers
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
            grads=grads,
            optimizer_state=state,
            peak=tracer.forward_peak.get(name, 0) if tracer.gpu else None,
            backward_peak=backward_peak.get(name, 0) if tracer.gpu else None,
            forward_time=tracer.forward_time.get(name)))
    outside = own.get(None, 0)
    out.append(LinkFigures(
        key=keys.OUTSIDE, parent=None, activations=outside,
        self_activations=outside, forgettable=None, params=0, grads=0,
        optimizer_state=0,
        peak=None, backward_peak=tracer.backward_peak.get(None, 0)
        if tracer.gpu else None, forward_time=None))
    return out


#: A link worth wrapping in ``F.forget``: the bytes that would free
#: (``forgettable``) per millisecond of its forward, which recomputing
#: costs.
Candidate = collections.namedtuple(
    'Candidate', ('key', 'forgettable', 'forward_time', 'bytes_per_ms'))


def forget_candidates(rows, times=None, top=3):
    """Ranks links by the bytes ``F.forget`` would free per millisecond of
    forward time.

    Args:
        rows (list of LinkFigures): A measured iteration's rows.
        times (dict): ``{name: seconds of forward per iteration}`` to use
            (:class:`~chainer_hookext.TimedLinks`' averages), else each
            row's ``forward_time``.
        top (int): How many to return.

    Returns:
        list of Candidate: Best first.  The outermost links (what would
        ``F.forget`` save there?) and ``(outside)`` are left out, and so
        are links freeing nothing or not timed.
    """
    found = []
    for row in rows:
        if row.key == keys.OUTSIDE or row.parent is None:
            continue
        seconds = row.forward_time if times is None else times.get(row.key)
        if not row.forgettable or not seconds:
            continue
        found.append(Candidate(row.key, row.forgettable, seconds,
                               row.forgettable / (seconds * 1e3)))
    found.sort(key=lambda c: -c.bytes_per_ms)
    return found[:top]


def state_arrays(param):
    """Returns the optimizer state arrays of ``param``: its update rule's
    ``state`` and, for ``use_fp32_update``, its float32 copy."""
    rule = param.update_rule
    arrays = [] if rule is None or rule.state is None else list(
        rule.state.values())
    master = getattr(rule, _chainer.UPDATE_RULE_FP32_MASTER, None)
    if master is not None:
        arrays.append(master.array)
    return arrays

"""Bars stacked per ``LogReport`` entry, shared by the pictures."""

import collections
import itertools

import numpy

from chainer_hookext.plots import _text
from chainer_hookext.plots import _top
from chainer_hookext.report import keys


#: The links' colours, cycled: a link has one colour in every picture.
LINK_COLOURS = ('tab:blue', 'tab:orange', 'tab:green', 'tab:red',
                'tab:purple', 'tab:brown', 'tab:pink', 'tab:olive',
                'tab:cyan', 'tab:gray')

Series = collections.namedtuple('Series', ('label', 'key', 'colour'))

Layer = collections.namedtuple('Layer', ('label', 'values', 'colour'))


def link_colours(names):
    """Returns ``{name: colour}`` of ``names``, ``(outside)`` last."""
    names = [n for n in names if n != keys.OUTSIDE] + [keys.OUTSIDE]
    return dict(zip(names, itertools.cycle(LINK_COLOURS)))


def reported(log, series):
    """Returns the entries of ``log`` holding a key of some ``series``."""
    return [e for e in log if any(s.key in e for s in series)]


def layers(log, series, scale=1.0):
    """Returns a :class:`Layer` per ``series`` in ``log``, times ``scale``."""
    return [Layer(s.label, numpy.array(
        [e.get(s.key, 0) for e in log], float) * scale, s.colour)
        for s in series if any(s.key in e for e in log)]


def named(panels, top=_top.TOP):
    """Returns ``panels`` with the largest labels kept, the rest summed."""
    sizes = collections.Counter()
    for layers in panels:
        for layer in layers:
            sizes[layer.label] += float(layer.values.sum())
    kept = set(_top.largest(sizes, top))
    label = _top.others(len(sizes) - len(kept))
    out = []
    for layers in panels:
        shown = [layer for layer in layers if layer.label in kept]
        rest = [layer.values for layer in layers if layer.label not in kept]
        if rest:
            shown.append(Layer(label, numpy.sum(rest, axis=0),
                               _top.OTHERS_COLOUR))
        out.append(shown)
    return out


def steps(log):
    """Returns ``(labels, name)``: epochs, else iterations."""
    epochs = [e.get('epoch') for e in log]
    if None not in epochs and len(set(epochs)) == len(epochs):
        return epochs, 'epoch'
    return [e.get('iteration', i + 1) for i, e in enumerate(log)], 'iteration'


def set_steps(ax, labels, name):
    """Labels at most 15 of the bars."""
    every = -(-len(labels) // 15)
    ticks = list(range(len(labels)))[::every]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(labels[i]) for i in ticks])
    ax.set_xlabel(name)


def stack(ax, layers, scale=1.0):
    bottom = 0
    for layer in layers:
        values = layer.values / scale
        ax.bar(range(len(values)), values, bottom=bottom,
               label=_text.escape(layer.label), color=layer.colour)
        bottom = bottom + values


def byte_unit(largest):
    for power, unit in ((3, 'GiB'), (2, 'MiB'), (1, 'KiB')):
        if largest >= 1024 ** power:
            return 1024 ** power, unit
    return 1, 'bytes'


def stack_bytes(ax, layers):
    """:func:`stack` of bytes; returns the unit."""
    scale, unit = byte_unit(max(sum(layer.values for layer in layers)))
    stack(ax, layers, scale)
    return unit


def legend_beside(ax, sources):
    """Puts the legend of ``sources`` right of ``ax``, top layer first."""
    found = collections.OrderedDict()
    for source in sources:
        for handle, label in zip(*source.get_legend_handles_labels()):
            found.setdefault(label, handle)
    ax.legend(list(found.values())[::-1], list(found)[::-1],
              loc='center left', bbox_to_anchor=(1.0, 0.5))

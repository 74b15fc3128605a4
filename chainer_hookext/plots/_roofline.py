"""Each link of a run under the machine's roofline (docs/flops.md, "The
roofline")."""

import collections
import itertools

import numpy

from chainer_hookext.plots import _bars
from chainer_hookext.plots import _matplotlib
from chainer_hookext.plots import _text
from chainer_hookext.plots import _top
from chainer_hookext.report import keys


MARKERS = (('forward', 'o'), ('backward', '^'))


def roofline(link_times):
    """Draws each link's intensity against its FLOP/s, log-log, under the
    peaks; past 10 links, the 9 with the most FLOPs and ``N others``.

    Args:
        link_times (dict): :func:`~chainer_hookext.plots.link_times`.

    Returns:
        matplotlib.figure.Figure: ``None`` without a point to draw.
    """
    _matplotlib.require()
    points = link_times.get('roofline') or {}
    peaks = link_times.get('peaks')
    found = [(path, way, marker, ways[way])
             for path, ways in points.items() if path != keys.OUTSIDE
             for way, marker in MARKERS if _drawn((ways or {}).get(way))]
    if not found or not peaks:
        return None
    flops, bandwidth = peaks['flops'], peaks['bandwidth']
    ridge = flops / bandwidth
    intensities = [point['intensity'] for _, _, _, point in found]
    low = min(intensities + [1.0]) / 4
    high = max(intensities + [4 * ridge]) * 4
    fig = _matplotlib.new_figure((8, 5))
    ax = fig.subplots()
    xs = numpy.array([low, ridge, high])
    ax.plot(xs, numpy.minimum(flops, xs * bandwidth), color='black',
            linewidth=1.5)
    ax.annotate(f'{flops / 1000000000.0:.3g} GFLOP/s', (high, flops),
                ha='right', va='bottom', fontsize=8)
    ax.annotate(f'{bandwidth / 1000000000.0:.3g} GB/s',
                (low, low * bandwidth), ha='left', va='bottom', fontsize=8,
                rotation=30)
    draw_points(ax, points, found)
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('arithmetic intensity (FLOPs per byte moved)')
    ax.set_ylabel('achieved FLOP/s (whole run)')
    ax.set_title('Links under the roofline (TimedLinks, flops=True)')
    ax.legend(loc='center left', bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    return fig


def draw_points(ax, points, found):
    """Draws ``found``: the largest links coloured, the rest one entry."""
    flops = collections.Counter()
    for path, _, _, point in found:
        flops[path] += point['flops']
    kept = set(_top.largest(flops, _top.TOP // 2))
    colours = dict(zip(points, itertools.cycle(_bars.LINK_COLOURS)))
    for path, way, marker, point in found:
        if path in kept:
            ax.scatter(point['intensity'], point['rate'], color=colours[path],
                       marker=marker, label=_text.escape(f'{path} ({way})'))
    label = _top.others(len(flops) - len(kept))
    for way, marker in MARKERS:
        rest = [point for path, one, _, point in found
                if one == way and path not in kept]
        if rest:
            ax.scatter([p['intensity'] for p in rest],
                       [p['rate'] for p in rest], color=_top.OTHERS_COLOUR,
                       marker=marker, label=label)
            label = '_nolegend_'  # one entry for both ways


def _drawn(point):
    return bool(point) and point.get('flops', 0) > 0 and bool(
        point.get('intensity')) and point.get('rate', 0) > 0

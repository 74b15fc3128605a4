"""Activation and gradient statistics as heat maps, link by log entry."""

import math

import numpy

from chainer_hookext.plots import _bars
from chainer_hookext.plots import _matplotlib
from chainer_hookext.plots import _text
from chainer_hookext.plots import _top
from chainer_hookext.report import keys


def gradients(log, names, statistic='norm'):
    """Draws :class:`~chainer_hookext.GradientStatistics`' ``statistic``
    of the gradient w.r.t. each link's output, per log entry.

    Args:
        log (list of dict): ``LogReport``'s entries.
        names (list of str): The links, top to bottom; past 20, the 19
            largest.
        statistic (str): ``'norm'``, ``'std'`` ...

    Returns:
        matplotlib.figure.Figure: ``None`` when no entry has it.
    """
    return heat_map(log, names, keys.gradient_key, statistic,
                    f'Gradient {statistic} per link (GradientStatistics)')


def activations(log, names, statistic='std'):
    """Draws :class:`~chainer_hookext.ActivationStatistics`' ``statistic``
    of each link's output, per log entry (as :func:`gradients`)."""
    return heat_map(log, names, keys.activation_key, statistic,
                    f'Output {statistic} per link (ActivationStatistics)')


def heat_map(log, names, key_of, statistic, title):
    _matplotlib.require()
    found = {name: key_of(name, (), statistic) for name in names}
    log = [e for e in log if any(key in e for key in found.values())]
    found = {name: key for name, key in found.items()
             if any(key in e for e in log)}
    if not found:
        return None
    values = {name: numpy.array([e.get(key, math.nan) for e in log], float)
              for name, key in found.items()}
    shown = _top.largest({name: max(
        (abs(v) for v in row if math.isfinite(v)), default=0.0)
        for name, row in values.items()})
    grid = numpy.array([values[name] for name in shown])
    labels, step = _bars.steps(log)
    fig = _matplotlib.new_figure((9, 1.8 + 0.25 * len(shown)))
    ax = fig.subplots()
    image = ax.imshow(numpy.ma.masked_invalid(grid), aspect='auto',
                      interpolation='nearest', norm=_norm(grid))
    fig.colorbar(image, ax=ax, label=statistic)
    _bars.set_steps(ax, labels, step)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([_text.escape(name) for name in shown])
    if len(shown) < len(found):
        title += f': the {len(shown)} largest of {len(found)} links'
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _norm(grid):
    from matplotlib import colors
    finite = grid[numpy.isfinite(grid)]
    if finite.size and finite.min() > 0 and finite.max() > finite.min():
        return colors.LogNorm(finite.min(), finite.max())
    return None

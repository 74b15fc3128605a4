"""TimedLinks' self time of each link per log entry, stacked."""

from chainer_hookext.plots import _bars
from chainer_hookext.plots import _matplotlib
from chainer_hookext.report import keys


def link_time(log, names):
    """Draws :class:`~chainer_hookext.TimedLinks`' self times, stacked:
    forward left, backward right, a bar per log entry.

    Args:
        log (list of dict): ``LogReport``'s entries.
        names (list of str): The links (``'main/predictor/l1'``), bottom to
            top; past 20, the 19 largest and ``N others``.

    Returns:
        matplotlib.figure.Figure: ``None`` when no entry has the times.
    """
    _matplotlib.require()
    colours = _bars.link_colours(names)
    names = [n for n in names if n != keys.OUTSIDE]
    forward = [_bars.Series(n, keys.figure_key('train', n, 'self_time'),
                            colours[n]) for n in names]
    backward = [_bars.Series(
        n, keys.figure_key('train', n, 'backward_self_time'), colours[n])
        for n in names] + [_bars.Series(  # all of (outside)'s is self
            keys.OUTSIDE, keys.figure_key('train', keys.OUTSIDE,
                                          'backward_time'),
            colours[keys.OUTSIDE])]
    log = _bars.reported(log, forward + backward)
    if not log:
        return None
    panels = [(title, layers) for title, layers in (
        ('forward', _bars.layers(log, forward, 1e3)),
        ('backward', _bars.layers(log, backward, 1e3))) if layers]
    panels = list(zip([title for title, _ in panels], _bars.named(
        [layers for _, layers in panels])))
    labels, step = _bars.steps(log)
    fig = _matplotlib.new_figure((2 + 3.5 * len(panels), 4.2))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (title, layers) in zip(axes, panels):
        _bars.stack(ax, layers)
        _bars.set_steps(ax, labels, step)
        ax.set_title(title)
    axes[0].set_ylabel('ms per training iteration (mean)')
    fig.suptitle('Self time of each link (TimedLinks)')
    _bars.legend_beside(axes[-1], axes)
    fig.tight_layout()
    return fig

"""TimedLoop's phases per log entry, stacked."""

from chainer_hookext.plots import _bars
from chainer_hookext.plots import _matplotlib
from chainer_hookext.report import keys
from chainer_hookext.timing import phases


#: TimedLoop's phases, bottom to top: they add up to the iteration.
PHASES = ((phases.DATA, 'tab:blue'), (phases.FORWARD, 'tab:orange'),
          (phases.BACKWARD, 'tab:green'), (phases.OPTIMIZER, 'tab:red'),
          (phases.ALLREDUCE, 'tab:purple'), (keys.EXTENSIONS, 'silver'),
          (phases.OTHER, 'dimgray'))


def loop_time(log):
    """Draws :class:`~chainer_hookext.TimedLoop`'s phases, a bar per entry.

    Args:
        log (list of dict): ``LogReport``'s entries.

    Returns:
        matplotlib.figure.Figure: ``None`` without ``time/loop/iteration``.
    """
    _matplotlib.require()
    log = [e for e in log if keys.loop_key(keys.ITERATION) in e]
    if not log:
        return None
    labels, step = _bars.steps(log)
    fig = _matplotlib.new_figure((7, 4.2))
    ax = fig.subplots()
    _bars.stack(ax, _bars.layers(log, [
        _bars.Series(phase, keys.loop_key(phase), colour)
        for phase, colour in PHASES], 1e3))
    _bars.set_steps(ax, labels, step)
    ax.set_ylabel('ms per training iteration (mean)')
    ax.set_title('Where each training iteration goes (TimedLoop)')
    _bars.legend_beside(ax, [ax])
    fig.tight_layout()
    return fig

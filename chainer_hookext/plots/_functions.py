"""TimedLinks' time of each function type."""

from chainer_hookext.plots import _matplotlib
from chainer_hookext.plots import _text


TOP = 15


def functions(function_summary):
    """Draws the :data:`TOP` function types' time, forward and backward.

    Args:
        function_summary (dict):
            :meth:`~chainer_hookext.TimedLinks.function_summary`.

    Returns:
        matplotlib.figure.Figure: ``None`` when no type took time.
    """
    _matplotlib.require()
    rows = sorted(((name, row.get('time', 0), row.get('backward_time', 0))
                   for name, row in function_summary.items()),
                  key=lambda row: -(row[1] + row[2]))
    rows = [row for row in rows if row[1] + row[2] > 0]
    if not rows:
        return None
    shown = rows[:TOP]
    scale, unit = (1e3, 'ms') if shown[0][1] + shown[0][2] < 1 else (
        1, 'seconds')
    fig = _matplotlib.new_figure((8, 1.6 + 0.3 * len(shown)))
    ax = fig.subplots()
    ys = range(len(shown))
    forward = [row[1] * scale for row in shown]
    ax.barh(ys, forward, color='tab:orange', label='forward')
    if any(row[2] for row in shown):
        ax.barh(ys, [row[2] * scale for row in shown], left=forward,
                color='tab:green', label='backward')
    ax.set_yticks(list(ys))
    ax.set_yticklabels([_text.escape(row[0]) for row in shown])
    ax.invert_yaxis()  # the largest at the top
    ax.set_xlabel(f'{unit}, whole run')
    ax.set_title('Time of each function type (TimedLinks, functions=True)'
                 + ('' if len(rows) <= TOP else
                    f': the {TOP} largest of {len(rows)}'))
    ax.legend(loc='lower right')
    fig.tight_layout()
    return fig

"""What changed between two runs (``python -m chainer_hookext compare``)."""

from chainer_hookext.plots import _matplotlib
from chainer_hookext.plots import _text


def changes(labels, percents):
    """Draws each key's change from run A to run B, in percent.

    Args:
        labels (list of str): The keys, largest change first.
        percents (list of float): ``100 * (B - A) / A`` of each.

    Returns:
        matplotlib.figure.Figure: ``None`` without keys.
    """
    _matplotlib.require()
    if not labels:
        return None
    fig = _matplotlib.new_figure((9, 1.6 + 0.3 * len(labels)))
    ax = fig.subplots()
    ys = range(len(labels))
    ax.barh(ys, percents, color=['tab:red' if p > 0 else 'tab:green'
                                 for p in percents])
    ax.axvline(0, color='black', linewidth=0.8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([_text.escape(label) for label in labels])
    ax.invert_yaxis()  # the largest at the top
    ax.set_xlabel('% change from run A to run B')
    ax.set_title('What changed (chainer_hookext compare)')
    fig.tight_layout()
    return fig

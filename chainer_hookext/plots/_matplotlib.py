"""matplotlib, imported when a picture is drawn: it is an optional extra.

Only its object API is used (``matplotlib.figure.Figure`` on an Agg
canvas), never ``pyplot``: no global state, no GUI backend.
"""

import collections


#: The message of the ``ImportError`` raised without matplotlib.
MESSAGE = ('chainer_hookext.plots needs matplotlib: '
           'pip install chainer-hookext[plot]')

#: The matplotlib modules the pictures use.
Modules = collections.namedtuple(
    'Modules', ('figure', 'patches', 'ticker', 'backend_agg'))


def require():
    """Returns the :class:`Modules`; raises ``ImportError`` (with
    :data:`MESSAGE`) without matplotlib."""
    try:
        from matplotlib import figure
        from matplotlib import patches
        from matplotlib import ticker
        from matplotlib.backends import backend_agg
    except ImportError as e:
        raise ImportError(MESSAGE) from e
    return Modules(figure, patches, ticker, backend_agg)


def new_figure(figsize):
    """Returns an empty ``Figure`` of ``figsize`` inches on an Agg canvas.
    """
    modules = require()
    fig = modules.figure.Figure(figsize=figsize)
    modules.backend_agg.FigureCanvasAgg(fig)
    return fig

"""matplotlib (optional), imported when drawing; never ``pyplot``."""

import collections


MESSAGE = ('chainer_hookext.plots needs matplotlib: '
           'pip install chainer-hookext[plot]')

Modules = collections.namedtuple(
    'Modules', ('figure', 'patches', 'backend_agg'))


def require():
    """Returns the :class:`Modules`; ``ImportError`` without matplotlib."""
    try:
        from matplotlib import figure
        from matplotlib import patches
        from matplotlib.backends import backend_agg
    except ImportError as e:
        raise ImportError(MESSAGE) from e
    return Modules(figure, patches, backend_agg)


def new_figure(figsize):
    modules = require()
    fig = modules.figure.Figure(figsize=figsize)
    modules.backend_agg.FigureCanvasAgg(fig)
    return fig

"""matplotlib, an optional extra, imported when a picture is drawn; only
its object API (a ``Figure`` on an Agg canvas), never ``pyplot``."""

import collections


MESSAGE = ('chainer_hookext.plots needs matplotlib: '
           'pip install chainer-hookext[plot]')

Modules = collections.namedtuple(
    'Modules', ('figure', 'patches', 'backend_agg'))


def require():
    """Returns the :class:`Modules` used; raises ``ImportError`` with
    :data:`MESSAGE` without matplotlib."""
    try:
        from matplotlib import figure
        from matplotlib import patches
        from matplotlib.backends import backend_agg
    except ImportError as e:
        raise ImportError(MESSAGE) from e
    return Modules(figure, patches, backend_agg)


def new_figure(figsize):
    """Returns an empty ``Figure`` of ``figsize`` inches on an Agg canvas."""
    modules = require()
    fig = modules.figure.Figure(figsize=figsize)
    modules.backend_agg.FigureCanvasAgg(fig)
    return fig

"""A figure as PNG bytes, and written to a file whole or not at all."""

import io

from chainer_hookext import _files


DPI = 100


def png(figure):
    """Returns the PNG bytes of a figure."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', dpi=DPI)
    return buffer.getvalue()


def save(figure, path):
    """Writes :func:`png` of ``figure`` to ``path``, whole or not at all."""
    _files.write_atomic(path, png(figure))

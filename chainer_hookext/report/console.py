"""Our console output: whole lines, written the way ``PrintReport`` writes.

Chainer's ``ProgressBar`` prints its status lines and moves the cursor back
up to the first of them, so that its next status overwrites them; Chainer's
``PrintReport`` erases from the cursor down before each row.  Every table
and line of ours goes through :func:`write`, which does the same on a
terminal, so no status line is left in or between our lines.  A stream
that is no terminal (a file, a pipe) gets the lines alone.
"""

import sys

from chainer.training.extensions import util


def write(lines, file=None):
    """Writes whole lines below ``ProgressBar``'s status lines.

    Args:
        lines (list of str): The lines, without their line ends.
        file: Stream to write to; ``sys.stdout`` by default.

    .. admonition:: Example

        >>> import io
        >>> out = io.StringIO()
        >>> write(['Phase  Share', 'data   2.1%'], out)
        >>> print(out.getvalue(), end='')
        Phase  Share
        data   2.1%
    """
    file = sys.stdout if file is None else file
    if is_terminal(file):
        # Chainer's own erase (util.ProgressBar.erase_console, which
        # ProgressBar runs before each status and PrintReport copies):
        # ESC[J from the cursor down, or the Windows console's call.
        util.ProgressBar(out=file).erase_console()
    file.write(''.join(line + '\n' for line in lines))
    if hasattr(file, 'flush'):
        file.flush()


def is_terminal(file):
    """Returns whether ``file`` is a terminal (``isatty()``), else False."""
    isatty = getattr(file, 'isatty', None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed file
        return False

"""Our console output: whole lines, written as ``PrintReport`` writes them,
below ``ProgressBar``'s status lines (docs/profile.md, "Console").
"""

import sys
import textwrap

from chainer.training.extensions import util


#: The console's width: no line we write is wider (the tables of
#: :mod:`.tables` are laid out to it, other lines wrapped).
WIDTH = 100


def write(lines, file=None):
    """Writes whole lines below ``ProgressBar``'s status lines.

    A line wider than :data:`WIDTH` goes on over the next lines, indented.

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
    file.write(''.join(part + '\n' for line in lines
                       for part in _wrapped(line)))
    if hasattr(file, 'flush'):
        file.flush()


def _wrapped(line):
    if len(line) <= WIDTH:
        return [line]
    return textwrap.wrap(line, WIDTH, subsequent_indent='    ',
                         break_on_hyphens=False)


def is_terminal(file):
    """Returns whether ``file`` is a terminal (``isatty()``), else False."""
    isatty = getattr(file, 'isatty', None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed file
        return False


#: What ``PrintReport`` writes before each row (on POSIX).
ERASE = '\033[J'


def for_print_report(file=None):
    """Returns ``file`` for ``PrintReport(out=...)``: itself on a terminal,
    else a stream that drops ``PrintReport``'s erase, so that a log file or
    a pipe gets its rows alone.

    .. admonition:: Example

        >>> import io
        >>> out = io.StringIO()
        >>> for_print_report(out).write(ERASE + 'epoch  main/loss')
        >>> out.getvalue()
        'epoch  main/loss'
    """
    file = sys.stdout if file is None else file
    return file if is_terminal(file) else _WithoutErase(file)


class _WithoutErase:
    # A text stream writing to ``file`` without PrintReport's erase.

    def __init__(self, file):
        self.file = file

    def write(self, text):
        self.file.write(text.replace(ERASE, ''))

    def flush(self):
        if hasattr(self.file, 'flush'):
            self.file.flush()

    def isatty(self):
        return False

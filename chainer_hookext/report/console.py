"""Our console output, below ``ProgressBar``'s (docs/profile.md, "Console").
"""

import sys
import textwrap

from chainer.training.extensions import util


#: No line we write is wider: tables are laid out to it, lines wrapped.
WIDTH = 100


def write(lines, file=None):
    """Writes ``lines`` to ``file`` (stdout), wrapped at :data:`WIDTH`.

    >>> import io
    >>> out = io.StringIO()
    >>> write(['Phase  Share', 'data   2.1%'], out)
    >>> print(out.getvalue(), end='')
    Phase  Share
    data   2.1%
    """
    file = sys.stdout if file is None else file
    if is_terminal(file):
        # ProgressBar's own erase (ESC[J, or the Windows console's call).
        util.ProgressBar(out=file).erase_console()
    file.write(''.join(part + '\n' for line in lines for part in (
        [line] if len(line) <= WIDTH else textwrap.wrap(
            line, WIDTH, subsequent_indent='    ', break_on_hyphens=False))))
    if hasattr(file, 'flush'):
        file.flush()


def is_terminal(file):
    """Whether ``file`` is a terminal; False for a closed file."""
    isatty = getattr(file, 'isatty', None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed file
        return False


#: What ``PrintReport`` writes before each row, on POSIX.
ERASE = '\033[J'


def for_print_report(file=None):
    """``file`` for ``PrintReport(out=...)``: no erase unless a terminal.

    >>> import io
    >>> out = io.StringIO()
    >>> for_print_report(out).write(ERASE + 'epoch  main/loss')
    >>> out.getvalue()
    'epoch  main/loss'
    """
    file = sys.stdout if file is None else file
    return file if is_terminal(file) else _WithoutErase(file)


class _WithoutErase:
    def __init__(self, file):
        self.file = file

    def write(self, text):
        self.file.write(text.replace(ERASE, ''))

    def flush(self):
        if hasattr(self.file, 'flush'):
            self.file.flush()

    def isatty(self):
        return False

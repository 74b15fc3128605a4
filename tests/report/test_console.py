import io
import os
import pathlib
import re
import subprocess
import sys

import chainer
import chainer.functions as F
import chainer.links as L
import pytest

import chainer_hookext
from chainer_hookext.report import console


ROOT = pathlib.Path(__file__).parents[2]

# A tiny training run with Chainer's PrintReport and ProgressBar (a status
# at every iteration) beside our tables: 3 epochs of 4 iterations.
# TimedLoop's lines come first: its second is shorter than the status line
# under it, whose tail a table written over it would keep.
CHILD = '''
import sys
sys.path.insert(0, {root!r})
from chainer.training import extensions
import chainer_hookext
from tests.conftest import make_trainer

trainer = make_trainer({out!r}, stop=(3, 'epoch'))
trainer.extend(chainer_hookext.TimedLoop(print_report=True))
trainer.extend(chainer_hookext.TimedLinks(print_report=True))
trainer.extend(chainer_hookext.LinkMemory(print_report=True))
trainer.extend(extensions.LogReport())
trainer.extend(extensions.PrintReport(['epoch', 'main/loss', 'time/main']))
trainer.extend(extensions.ProgressBar(update_interval=1))
trainer.run()
'''

# ProgressBar's four status lines (chainer/training/extensions/
# progress_bar.py).
STATUS = re.compile(r'^( +total \[|this epoch \[| +\d+ iter, |.* iters/sec\.)')
ESCAPE = re.compile(r'\x1b\[(\d*)([A-Za-z])')


class Screen:
    """The few codes Chainer's ProgressBar and PrintReport write, on a
    screen as wide and as tall as needed (the scrollback included)."""

    def __init__(self):
        self.lines = [[]]
        self.row = self.col = 0

    def feed(self, text):
        pos = 0
        while pos < len(text):
            match = ESCAPE.match(text, pos)
            if match:
                self._code(int(match.group(1) or 0), match.group(2))
                pos = match.end()
                continue
            char = text[pos]
            pos += 1
            if char == '\r':
                self.col = 0
            elif char == '\n':  # the tty adds the \r (onlcr)
                self.row += 1
                while len(self.lines) <= self.row:
                    self.lines.append([])
            else:
                assert char >= ' ', 'unexpected control {!r}'.format(char)
                line = self.lines[self.row]
                line.extend(' ' * (self.col + 1 - len(line)))
                line[self.col] = char
                self.col += 1

    def _code(self, n, code):
        if code == 'A':  # cursor up
            self.row = max(0, self.row - max(n, 1))
        elif code == 'G':  # to column n
            self.col = max(n, 1) - 1
        elif code == 'J' and n == 0:  # erase to the end of the screen
            del self.lines[self.row][self.col:]
            del self.lines[self.row + 1:]
        elif code == 'K' and n == 0:  # erase to the end of the line
            del self.lines[self.row][self.col:]
        else:
            raise AssertionError('unexpected code {!r}'.format((n, code)))

    def text(self):
        return [''.join(line).rstrip() for line in self.lines]


def run_in_terminal(tmp_path):
    """Runs :data:`CHILD` with a pseudo-terminal as its stdout; returns
    what it wrote there."""
    master, slave = os.openpty()
    script = CHILD.format(root=str(ROOT), out=str(tmp_path / 'result'))
    with open(tmp_path / 'stderr', 'wb') as err:
        proc = subprocess.Popen([sys.executable, '-c', script],
                                stdin=subprocess.DEVNULL, stdout=slave,
                                stderr=err, cwd=str(tmp_path))
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    assert proc.wait(timeout=120) == 0, (tmp_path / 'stderr').read_text()
    return b''.join(chunks).decode()


@pytest.mark.skipif(not hasattr(os, 'openpty'), reason='no pseudo-terminal')
def test_lines_stay_whole_in_terminal(tmp_path):
    raw = run_in_terminal(tmp_path)
    # Every line written, escape codes left out: ours and PrintReport's,
    # each status line of ProgressBar.
    written = [line.rstrip() for line in
               ESCAPE.sub('', raw).replace('\r\n', '\n').split('\n')]
    expected = [line for line in written if not STATUS.match(line)]
    screen = Screen()
    screen.feed(raw)
    shown = screen.text()
    while shown and not shown[-1]:
        shown.pop()
    while expected and not expected[-1]:
        expected.pop()
    # The status lines erased, every other line whole and in order.
    assert shown == expected
    for epoch, iteration in ((1, 4), (2, 8), (3, 12)):
        for title in ('TimedLinks', 'LinkMemory', 'TimedLoop'):
            assert any(line.startswith('{} at iteration {}:'.format(
                title, iteration)) for line in shown)
        assert any(re.match(r'{} +\d'.format(epoch), line)
                   for line in shown)
    assert shown.count('epoch       main/loss   time/main') == 1
    assert any(line.startswith('Phase ') for line in shown)


def test_no_escape_codes_without_terminal(trainer_factory, capsys):
    trainer = trainer_factory(stop=(2, 'iteration'))
    trainer.extend(chainer_hookext.TimedLinks(print_report=True),
                   trigger=(1, 'iteration'))
    trainer.extend(chainer_hookext.LinkMemory(print_report=True),
                   trigger=(1, 'iteration'))
    trainer.extend(chainer_hookext.TimedLoop(print_report=True),
                   trigger=(1, 'iteration'))
    trainer.run()
    out = capsys.readouterr().out
    assert 'TimedLoop at iteration 2' in out
    assert '\x1b' not in out


class Terminal(io.StringIO):

    def isatty(self):
        return True


@pytest.mark.skipif(os.name == 'nt', reason='the Windows console is called')
def test_write_erases_below_on_terminal():
    out = Terminal()
    console.write(['a', 'b'], out)
    assert out.getvalue() == '\x1b[Ja\nb\n'


def test_write_plain_stream():
    out = io.StringIO()
    console.write(['a', 'b'], out)
    assert out.getvalue() == 'a\nb\n'


def test_is_terminal():
    assert console.is_terminal(Terminal())
    assert not console.is_terminal(io.StringIO())
    assert not console.is_terminal(object())
    closed = io.StringIO()
    closed.close()
    assert not console.is_terminal(closed)


# -- the tables of print_report=True on a model of many links -----------------
class Deep(chainer.ChainList):
    """``n`` Linear links, each followed by a ReLU."""

    def __init__(self, n=40):
        super().__init__(*[L.Linear(4 if i == 0 else 8,
                                    8 if i < n - 1 else 3)
                           for i in range(n)])

    def forward(self, x):
        for link in self.children():
            x = F.relu(link(x))
        return x


HEADERS = ('LinkName', 'Link / Function')


def table_rows(lines):
    """Each table's rows between its header and its end (a title, another
    header, a line saying how many more, or the ``(all links)`` totals)."""
    tables, rows = [], None
    for line in lines:
        if line.startswith(HEADERS):
            rows = []
            tables.append(rows)
        elif rows is None or ' at iteration ' in line or line.startswith(
                ('...', '(all links)', 'F.forget')):
            rows = None
        else:
            rows.append(line)
    return tables


def test_tables_fit_the_console_with_many_links(trainer_factory, capsys):
    trainer = trainer_factory(stop=(2, 'iteration'),
                              model=L.Classifier(Deep()))
    for extension in (
            chainer_hookext.TimedLoop(print_report=True),
            chainer_hookext.TimedLinks(print_report=True, flops=True,
                                       functions=True),
            chainer_hookext.LinkMemory(print_report=True)):
        trainer.extend(extension, trigger=(2, 'iteration'))
    trainer.run()
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= console.WIDTH == 100
    tables = table_rows(lines)
    assert len(tables) >= 4  # times (two blocks), functions, memory
    for rows in tables:
        assert 0 < len(rows) <= 16, rows
    more = [line for line in lines if line.startswith('... ')]
    assert any(re.match(r'\.\.\. \d+ more links', line) for line in more)
    assert len(lines) < 120

"""What changed between two runs, each family's largest change first
(docs/profile.md, "`python -m chainer_hookext`").
"""

import base64
import collections
import html
import os

from chainer_hookext import _files
from chainer_hookext import plots
from chainer_hookext.profile import page
from chainer_hookext.profile import run as run_module
from chainer_hookext.report import keys
from chainer_hookext.report import units

#: A key's latest value in runs ``a`` and ``b`` (``None``: not reported),
#: per example where the batch sizes differ, and whether the change is
#: within either run's own spread (:func:`spreads`).
Change = collections.namedtuple('Change', (
    'key', 'a', 'b', 'a_per_example', 'b_per_example', 'within_spread'),
    defaults=(None, None, False))

_FORMATS = ((keys.prefix('train', keys.TIME), units.seconds),
            (keys.prefix('train', keys.FLOPS), units.count),
            (keys.prefix('train', keys.MEMORY), units.nbytes))
#: Per-iteration families, shown per example too.
PER_EXAMPLE = (keys.prefix('train', keys.TIME),
               keys.prefix('train', keys.FLOPS))
#: TimedLoop's keys that are not seconds.
_NOT_FIGURES = (keys.loop_key(keys.SLOWEST), keys.loop_key(keys.SLOWEST_RANK))
OUT_SUFFIXES = {'.html': 'a page', '.png': 'a picture'}


def figures(entry):
    """``{key: number}`` of a log entry's keys of ours, spreads left out."""
    spread = keys.spread_keys(entry)
    return {key: value for key, value in entry.items()
            if key.startswith(keys.TRAIN_PREFIXES) and key not in spread
            and key not in _NOT_FIGURES and isinstance(value, (int, float))}


def latest_values(run):
    """The latest value of each of ``run``'s keys of ours."""
    out = {}
    for entry in run.log:
        out.update(figures(entry))
    return out


def spreads(run):
    """``{key: spread}`` in ``run`` (docs/profile.md, "Within spread")."""
    values = collections.defaultdict(list)
    for entry in run.log:
        for key, value in figures(entry).items():
            values[key].append(value)
    return {key: (max(v[1:]) - min(v[1:])) / abs(v[-1])
            for key, v in values.items() if len(v) >= 3 and v[-1]}


def batch_sizes(a, b):
    """Both runs' batch sizes when known and different, else ``None``."""
    sizes = [run.profile.get('config', {}).get('batch_size') for run in (
        a, b)]
    if None in sizes or 0 in sizes or sizes[0] == sizes[1]:
        return None
    return sizes


def check_comparable(a, b):
    """Raises :class:`~.run.RunError` when the runs train different
    models."""
    models = [run.profile.get('config', {}).get('model') for run in (a, b)]
    if None not in models and models[0] != models[1]:
        raise run_module.RunError(
            f'the runs train different models: {a.out} trains {models[0]}, '
            f'{b.out} trains {models[1]}')
    if not set(latest_values(a)) & set(latest_values(b)):
        raise run_module.RunError(
            f'the runs have no key in common: {a.out} and {b.out} measured '
            'different models or different extensions')


def changes(a, b):
    """The :class:`Change` of every key of either run, in print order."""
    values_a, values_b = latest_values(a), latest_values(b)
    spread_a, spread_b = spreads(a), spreads(b)
    sizes = batch_sizes(a, b)
    found = []
    for key in sorted(set(values_a) | set(values_b)):
        change = Change(key, values_a.get(key), values_b.get(key))
        if sizes and key.startswith(PER_EXAMPLE):
            change = change._replace(
                a_per_example=_divided(change.a, sizes[0]),
                b_per_example=_divided(change.b, sizes[1]))
        spread = max(spread_a.get(key, -1.0), spread_b.get(key, -1.0))
        found.append(change._replace(
            within_spread=relative_to_a(change) is not None and
            abs(relative_to_a(change)) <= spread))
    return sorted(found, key=lambda c: (family(c.key), -size(c), c.key))


def family(key):
    """0 time, 1 FLOPs, 2 memory."""
    return next(rank for rank, (prefix, _) in enumerate(_FORMATS)
                if key.startswith(prefix))


def compared(change):
    """The two values a change is judged by: per example where known."""
    if change.a_per_example is not None or change.b_per_example is not None:
        return change.a_per_example, change.b_per_example
    return change.a, change.b


def size(change):
    """A change's size in its family's unit."""
    a, b = compared(change)
    return abs((b or 0) - (a or 0))


def relative_to_a(change):
    """``(B - A) / |A|``, or ``None`` without both or when ``A`` is 0."""
    a, b = compared(change)
    if a is None or b is None or not a:
        return None
    return (b - a) / abs(a)


def describe(run):
    """One line naming a run's configuration."""
    config = run.profile.get('config', {})
    said = [f'{k}={config[k]}' for k in (
        'model', 'optimizer', 'batch_size', 'iteration') if k in config]
    return f'{run.out}: {", ".join(said) or "no profile.json"}'


def rows(found, top=10):
    """A header and a row of strings per change, ``top`` per family."""
    per_example = any(c.a_per_example is not None or c.b_per_example
                      is not None for c in found)
    out = [['Key', 'A', 'B', 'Change'] + (
        ['A/example', 'B/example', 'Change/example'] if per_example
        else []) + ['Spread']]
    shown = collections.Counter()
    for change in found:
        shown[family(change.key)] += 1
        if shown[family(change.key)] > top:
            continue
        fmt = _format(change.key)
        row = [change.key] + _moved(change.a, change.b, fmt)
        if per_example:
            row += _moved(change.a_per_example, change.b_per_example, fmt) if (
                change.key.startswith(PER_EXAMPLE)) else ['', '', '']
        out.append(row + ['within' if change.within_spread else ''])
    return out


def print_changes(found, file, top=10):
    """Prints each family's first ``top`` changes as a table."""
    table = rows(found, top)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for row in table:
        file.write('  '.join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths))).rstrip() + '\n')


def draw(found, top=20):
    """A figure of the ``top`` largest relative changes (matplotlib)."""
    shown = sorted((c for c in found if relative_to_a(c) is not None),
                   key=lambda c: abs(relative_to_a(c)), reverse=True)[:top]
    return plots.changes([c.key for c in shown],
                         [100.0 * relative_to_a(c) for c in shown])


def check_out(path):
    """Raises :class:`~.run.RunError` for a suffix not in
    :data:`OUT_SUFFIXES`."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in OUT_SUFFIXES:
        said = ' or '.join(f'{s} ({w})' for s, w in OUT_SUFFIXES.items())
        what = f'a {suffix} file' if suffix else 'a file without a suffix'
        raise run_module.RunError(
            f'--out {path!r}: cannot write {what}; give a file ending in '
            f'{said}')


def write(a, b, found, path, top=10):
    """Writes the comparison to ``path``, ``.html`` or ``.png``,
    atomically."""
    check_out(path)
    if path.lower().endswith('.png'):
        plots.save(draw(found), path)
        return
    try:
        data = base64.b64encode(plots.png(draw(found))).decode('ascii')
        picture = f'<p><img alt="changes" src="data:image/png;base64,{data}">'
    except ImportError as e:
        picture = f'<p>{html.escape(str(e))}</p>'
    header, *table = rows(found, top)
    parts = [
        '<!DOCTYPE html>', '<html><head><meta charset="utf-8">',
        '<title>Compared: A and B</title></head><body>',
        '<h1>What changed from A to B</h1>',
        f'<p>A: {html.escape(describe(a))}<br>'
        f'B: {html.escape(describe(b))}</p>', page.html_table(header, table),
        '<p>Spread <i>within</i>: the change is no larger than '
        'the runs\' own spread of the key (docs/profile.md).</p>',
        picture, '</body></html>']
    _files.write_atomic(path, '\n'.join(parts).encode('utf-8'))


def _moved(a, b, fmt):
    cells = ['-' if a is None else fmt(a), '-' if b is None else fmt(b)]
    if a is None or b is None:
        return cells + ['only in ' + ('B' if a is None else 'A')]
    if a:
        return cells + [f'{100.0 * (b - a) / abs(a):+.1f}%']
    return cells + ['new' if b else '=']


def _divided(value, batch_size):
    return None if value is None else value / batch_size


def _format(key):
    return next(fmt for prefix, fmt in _FORMATS if key.startswith(prefix))

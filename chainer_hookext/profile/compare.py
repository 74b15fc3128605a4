"""What changed between two runs: per link, phase and function type.

Each run's latest value of every key of this package in its log (time,
FLOPs, memory: ``time/main/predictor/l1``, ``time/loop/data``,
``time/function/LinearFunction``, ``memory/main/activations`` ...) is
set beside the other's; the changes are grouped by family (time, FLOPs,
memory), each family's largest change first: seconds, FLOPs and bytes
compare within a family, and a small figure doubling matters less than a
large one growing by a tenth.
"""

import collections

from chainer_hookext.profile import run as run_module
from chainer_hookext.report import keys
from chainer_hookext.report import units

#: A key's latest value in run ``a`` and run ``b`` (``None``: not reported).
Change = collections.namedtuple('Change', ('key', 'a', 'b'))

#: How values of each family are printed.
_FORMATS = ((keys.TIME + '/', units.seconds), (keys.FLOPS + '/', units.count),
            (keys.MEMORY + '/', units.nbytes))


def latest_values(run):
    """Returns ``{key: value}``: the latest value of each key of this
    package in ``run``'s log (spreads over workers left out)."""
    spread = tuple('/' + s for s in keys.STATISTICS)
    slowest = keys.LOOP_PREFIX + keys.SLOWEST  # an iteration's number
    out = {}
    for entry in run.log:
        for key, value in entry.items():
            if (key.startswith(run_module.FAMILIES) and not key.endswith(
                    spread) and not key.startswith(slowest)
                    and isinstance(value, (int, float))):
                out[key] = value
    return out


def check_comparable(a, b):
    """Raises :class:`~.run.RunError` when two runs train different
    models (their configurations, or no key in common, say so)."""
    models = [run.profile.get('config', {}).get('model') for run in (a, b)]
    if None not in models and models[0] != models[1]:
        raise run_module.RunError(
            'the runs train different models: {} trains {}, {} trains {}'
            .format(a.out, models[0], b.out, models[1]))
    if not set(latest_values(a)) & set(latest_values(b)):
        raise run_module.RunError(
            'the runs have no key in common: {} and {} measured different '
            'models or different extensions'.format(a.out, b.out))


def changes(a, b):
    """Returns the :class:`Change` of every key of either run: time, FLOPs,
    then memory, each family's largest change first (a key only one run
    has: its value)."""
    values_a, values_b = latest_values(a), latest_values(b)
    found = [Change(key, values_a.get(key), values_b.get(key))
             for key in sorted(set(values_a) | set(values_b))]
    return sorted(found, key=lambda c: (family(c.key), -size(c), c.key))


def family(key):
    """The rank of a key's family: 0 time, 1 FLOPs, 2 memory."""
    for rank, (prefix, _) in enumerate(_FORMATS):
        if key.startswith(prefix):
            return rank
    return len(_FORMATS)


def size(change):
    """The size of a change in its family's unit."""
    return abs((change.b or 0) - (change.a or 0))


def relative(change):
    """The size of a change relative to the larger value (1 for a key
    only one run has)."""
    a, b = change.a, change.b
    if a is None or b is None:
        return 1.0
    larger = max(abs(a), abs(b))
    return abs(b - a) / larger if larger else 0.0


def describe(run):
    """One line naming a run's configuration."""
    config = run.profile.get('config', {})
    said = ['{}={}'.format(k, config[k]) for k in (
        'model', 'optimizer', 'batch_size', 'iteration') if k in config]
    return '{}: {}'.format(run.out, ', '.join(said) or 'no profile.json')


def print_changes(found, file, top=10):
    """Prints each family's first ``top`` changes as a table."""
    rows = [['Key', 'A', 'B', 'Change']]
    shown = collections.Counter()
    for change in found:
        shown[family(change.key)] += 1
        if shown[family(change.key)] > top:
            continue
        fmt = _format(change.key)
        a = '-' if change.a is None else fmt(change.a)
        b = '-' if change.b is None else fmt(change.b)
        if change.a is None or change.b is None:
            moved = 'only in ' + ('B' if change.a is None else 'A')
        elif change.a:
            moved = '{:+.1f}%'.format(100.0 * (change.b - change.a) /
                                      abs(change.a))
        else:
            moved = 'new' if change.b else '='
        rows.append([change.key, a, b, moved])
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        file.write('  '.join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths))).rstrip() + '\n')


def draw(found, top=20):
    """Returns a figure of the ``top`` largest changes relative to ``A``
    of keys both runs have, in percent (needs matplotlib)."""
    from chainer_hookext import plots
    shown = sorted((c for c in found if c.a and c.b is not None),
                   key=relative, reverse=True)[:top]
    return plots.changes([c.key for c in shown],
                         [100.0 * (c.b - c.a) / abs(c.a) for c in shown])


def _format(key):
    for prefix, fmt in _FORMATS:
        if key.startswith(prefix):
            return fmt
    return str

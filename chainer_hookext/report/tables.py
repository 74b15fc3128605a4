"""Text tables of timing figures, printed from structured rows.

Three shapes: Chainer's ``TimerHook.print_report`` table (class names);
a tree of :class:`~.records.Entry` rows, each indented under its parent
and shortened to its part below it::

    LinkPath   ElapsedTime  SelfTime  Occurrence
    /             120.00us   20.00us           4
      predictor   100.00us   40.00us           4
        l1         30.00us   30.00us           4

with backward columns when backward is timed and a last ``(outside)`` row
with backward times only; and the same tree of figures gathered over
ChainerMN workers (mean, min, max, slowest rank).
"""

from chainer_hookext.report import keys
from chainer_hookext.report import units


def print_class_table(entries, unit, file):
    """Prints :func:`.records.class_entries` rows as Chainer does."""
    fmt = units.formatter(unit, [e.elapsed_time for e in entries])
    rows = [['LinkName', 'ElapsedTime', 'Occurrence']]
    for e in entries:
        rows.append([e.key, fmt(e.elapsed_time), str(e.occurrence)])
    _write(rows, '>>>', file)


def print_tree_table(entries, unit, file, header='LinkPath',
                     backward=False):
    """Prints :class:`~.records.Entry` rows as an indented tree.

    Args:
        entries (list of Entry): Parents before their children.
        unit (str): A unit of :data:`.units.UNITS`.
        file: Stream to write to.
        header (str): Title of the key column.
        backward (bool): Add the backward columns.
    """
    fields = ['elapsed_time', 'self_time']
    titles = [header, 'ElapsedTime', 'SelfTime']
    if backward:
        fields += ['backward_time', 'backward_self_time']
        titles += ['BackwardTime', 'BackwardSelf']
    fmt = units.formatter(unit, [
        getattr(e, f) for e in entries for f in fields[::2]])
    rows = [titles + ['Occurrence']]
    for label, entry in zip(tree_labels(entries), entries):
        row = [label] + [fmt(getattr(entry, f)) for f in fields]
        row.append(str(entry.occurrence))
        if entry.key == keys.OUTSIDE:  # no forward: blank its cells
            row[1] = row[2] = row[-1] = ''
        rows.append(row)
    _write(rows, '<' + '>' * len(titles), file)


def print_spread_table(rows, unit, file, header='LinkName',
                       backward=False):
    """Prints figures gathered over workers as an indented tree.

    Args:
        rows (list): Objects with ``key``, ``parent`` and ``spreads``
            (``{field: Spread}``, see
            :mod:`chainer_hookext.report.gather`).
        unit (str): A unit of :data:`.units.UNITS`.
        file: Stream to write to.
        header (str): Title of the key column.
        backward (bool): Add the backward columns.
    """
    extra = [('self_time', 'SelfMean')]
    if backward:
        extra += [('backward_time', 'BackwardMean'),
                  ('backward_self_time', 'BackwardSelfMean')]
    fmt = units.formatter(unit, [
        s.max for r in rows for s in r.spreads.values()])
    table = [[header, 'Mean', 'Min', 'Max', 'SlowestRank']
             + [title for _, title in extra]]
    for label, row in zip(tree_labels(rows), rows):
        main = row.spreads.get('elapsed_time')
        cells = [label]
        if main is None:  # (outside): backward only
            cells += ['', '', '', '']
        else:
            cells += [fmt(main.mean), fmt(main.min), fmt(main.max),
                      str(main.slowest_rank)]
        for field, _ in extra:
            spread = row.spreads.get(field)
            cells.append('' if spread is None else fmt(spread.mean))
        table.append(cells)
    _write(table, '<' + '>' * (len(table[0]) - 1), file)


def tree_labels(rows):
    """Returns the indented label of each row (``key`` and ``parent``).

    A row is indented one step below its parent's row and shows its key
    without the parent's key in front.
    """
    depths = {}
    labels = []
    for row in rows:
        parent = row.parent
        if parent in depths:
            depth = depths[parent] + 1
            label = row.key
            if row.key.startswith(parent):
                label = row.key[len(parent):].lstrip('/') or row.key
        else:
            depth, label = 0, row.key
        depths.setdefault(row.key, depth)
        labels.append('  ' * depth + label)
    return labels


def _write(rows, aligns, file):
    widths = [max(len(row[i]) for row in rows) for i in range(len(aligns))]
    template = '  '.join(
        '{:%s%d}' % (align, width) for align, width in zip(aligns, widths))
    for row in rows:
        file.write(template.format(*row).rstrip())
        file.write('\n')
    file.flush()

"""Every printed text table, from structured rows, laid out for the console
(docs/profile.md, "Console").
"""

from chainer_hookext.report import console
from chainer_hookext.report import keys
from chainer_hookext.report import units


TOP = 15
KEY_WIDTH = 40
EVERY_LINK = 'summary() and profile.json (ProfileReport) have them all'


def print_class_table(entries, unit, file):
    """Prints :func:`.records.class_entries` rows as Chainer does."""
    fmt = units.formatter(unit, [e.elapsed_time for e in entries])
    _write([['LinkName', 'ElapsedTime', 'Occurrence']] + [
        [e.key, fmt(e.elapsed_time), str(e.occurrence)] for e in entries],
        file, '>>>')


def print_tree_table(entries, unit, file, header='LinkPath',
                     backward=False, points=None, top=TOP):
    """Prints ``Entry`` rows, parents first, as a tree; ``points``
    (``Roofline.link_points``) adds the roofline's columns."""
    entries, more = top_rows(entries, top,
                             lambda e: e.elapsed_time + e.backward_time)
    figures = keys.link_figures(backward)
    fmt = units.formatter(unit, [
        getattr(e, f.field) for e in entries for f in figures])
    rows = [[header] + [f.title for f in figures] + ['Occurrence']]
    for label, entry in zip(tree_labels(entries), entries):
        if entry.key == keys.OUTSIDE:  # no forward: backward cells only
            cells = [fmt(getattr(entry, f.field)) if f.backward else ''
                     for f in figures] + ['']
        else:
            cells = [fmt(getattr(entry, f.field)) for f in figures] + [
                str(entry.occurrence)]
        if points is not None:
            cells += _roofline_cells(points.get(entry.key), backward)
        rows.append([label] + cells)
    groups = [range(1, len(figures) + 2)]
    if points is not None:
        rows[0] += _ROOFLINE_TITLES[:8 if backward else 4]
        groups += [range(start, start + 4) for start in range(
            len(figures) + 2, len(rows[0]), 4)]
    _write(rows, file, groups=groups, more=more)


_ROOFLINE_TITLES = ['FLOPs', 'FLOP/s', 'Peak%', 'Bound',
                    'BwdFLOPs', 'BwdFLOP/s', 'BwdPeak%', 'BwdBound']


def _roofline_cells(link_points, backward):
    return [cell for point in (link_points or (None, None))[
        :2 if backward else 1] for cell in ([''] * 4 if point is None else [
            units.count(point.flops), units.count(point.rate),
            f'{point.percent:.1f}%', point.bound])]


REST = '(rest)'


def print_function_table(rows, self_times, unit, file, backward=False,
                         flops=False, top=TOP):
    """Prints each link's self figures by function type, then each type's
    total; ``self_times``: ``{link: (self, backward self)}``; ``top``: the
    rows of links (with their types) and the types to show."""
    by_link = {}
    for row in rows:
        by_link.setdefault(row.link, []).append(row)
    self_times = {link: pair for link, pair in self_times.items()
                  if by_link.get(link)}
    shown = _links_within(self_times, by_link, top)
    figures = keys.function_figures(backward, flops)
    fmt = units.formatter(unit, [getattr(r, f.field) for r in rows
                                 for f in figures if f.family == keys.TIME] + [
        t for pair in self_times.values() for t in pair])
    table = [['Link / Function'] + [f.title for f in figures] + ['Calls']]

    def cells(row):
        return [fmt(getattr(row, f.field)) if f.family == keys.TIME
                else units.count(getattr(row, f.field))
                for f in figures] + [str(row.occurrence)]

    for link, (own, backward_own) in self_times.items():
        if link not in shown:
            continue
        mine = by_link[link]
        table.append([link] + [
            fmt(own) if f.field == 'time' and link != keys.OUTSIDE else
            fmt(backward_own) if f.field == 'backward_time' else ''
            for f in figures] + [''])
        table += [['  ' + row.function] + cells(row) for row in mine]
        if link != keys.OUTSIDE:
            rest = own - sum(row.time for row in mine)
            table.append(['  ' + REST, fmt(rest)] + [''] * len(figures))
    more = _more(len(self_times) - len(shown), 'link')
    table.append(['(all links)'] + [''] * len(figures) + [''])
    totals = sorted(keys.function_totals(rows), key=lambda row: -(
        row.time + row.backward_time))
    table += [['  ' + row.function] + cells(row) for row in totals[:top]]
    more += _more(len(totals) - len(totals[:top]), 'function type')
    _write(table, file, more=more)


def _links_within(self_times, by_link, top):
    # The first link whatever its rows, then others while ``top`` rows fit.
    if top is None:
        return set(self_times)
    shown, used = set(), 0
    for link in sorted(self_times, key=lambda k: -sum(self_times[k])):
        size = len(by_link[link]) + 2
        if shown and used + size > top:
            break
        shown.add(link)
        used += size
    return shown


def print_spread_table(entries, unit, file, header='LinkName',
                       backward=False, top=TOP):
    """Prints ``GatheredEntry`` rows as a tree: the first figure's spread,
    the others' mean."""
    entries, more = top_rows(entries, top, lambda e: sum(
        e.spreads[field].mean for field in ('elapsed_time', 'backward_time')
        if field in e.spreads))
    first, *others = keys.link_figures(backward)
    fmt = units.formatter(unit, [
        s.max for e in entries for s in e.spreads.values()])
    rows = [[header, first.mean_title, 'Min', 'Max', 'SlowestRank']
            + [f.mean_title for f in others]]
    for label, entry in zip(tree_labels(entries), entries):
        spread = entry.spreads.get(first.field)
        cells = [label] + (['', '', '', ''] if spread is None else [  # outside
            fmt(spread.mean), fmt(spread.min), fmt(spread.max),
            str(spread.slowest_rank)])
        rows.append(cells + [
            '' if entry.spreads.get(f.field) is None else
            fmt(entry.spreads[f.field].mean) for f in others])
    _write(rows, file, more=more)


def print_share_table(seconds, whole, unit, file):
    """Prints ``{label: seconds}``, each with its share of ``whole``."""
    fmt = units.formatter(unit, list(seconds.values()))
    _write([['Phase', 'PerIteration', 'Share']] + [
        [label, fmt(value), f'{100.0 * value / whole:.1f}%' if whole else '']
        for label, value in seconds.items()], file)


def tree_labels(rows):
    """Each row's label: indented below its parent, without its key."""
    depths, labels = {}, []
    for row in rows:
        depth, label, parent = 0, row.key, row.parent
        if parent in depths:
            depth = depths[parent] + 1
            if row.key.startswith(parent):
                label = row.key[len(parent):].lstrip('/') or row.key
        depths.setdefault(row.key, depth)
        labels.append('  ' * depth + label)
    return labels


def print_memory_table(rows, file, gpu, top=TOP):
    """Prints ``LinkFigures`` rows as a tree; ``gpu`` adds the peaks."""
    rows, more = top_rows(rows, top, lambda row: sum(
        getattr(row, field) or 0 for field in _INCLUSIVE_BYTES))
    shown = [f for f in keys.MEMORY_FIGURES if gpu or not f.gpu]
    table = [['LinkName'] + [f.title for f in shown] + ['ForwardTime']]
    for label, row in zip(tree_labels(rows), rows):
        cells = [units.nbytes(getattr(row, f.field))
                 if getattr(row, f.field) is not None
                 and (f.outside or row.key != keys.OUTSIDE) else ''
                 for f in shown]
        time = row.forward_time
        table.append([label] + cells + [
            '' if time is None else f'{time * 1e3:.2f}ms'])
    _write(table, file, more=more)


#: Those of a memory row's figures that hold its descendants' too.
_INCLUSIVE_BYTES = ('activations', 'params', 'grads', 'optimizer_state')


def top_rows(rows, top, size):
    """The ``top`` rows of the largest ``size(row)`` (``None``: all), with
    their ancestors, in their order, and the line on the others."""
    if top is None or len(rows) <= top:
        return list(rows), []
    chosen = set(sorted(range(len(rows)), key=lambda i: -size(rows[i]))[:top])
    index = {row.key: i for i, row in enumerate(rows)}
    for i in list(chosen):
        parent = rows[i].parent
        while parent in index and index[parent] not in chosen:
            chosen.add(index[parent])
            parent = rows[index[parent]].parent
    kept = [row for i, row in enumerate(rows) if i in chosen]
    return kept, _more(len(rows) - len(kept), 'link')


def _more(count, noun):
    noun += '' if count == 1 else 's'
    return [f'... {count} more {noun}: {EVERY_LINK}'] if count else []


def _write(rows, file, aligns=None, groups=None, more=()):
    # Blocks of whole column groups, each with the key column, each as
    # wide as the console at most.
    aligns = aligns or '<' + '>' * (len(rows[0]) - 1)
    rows = [[_shorten(row[0])] + row[1:] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(aligns))]
    if groups is None:
        groups = [[i] for i in range(1, len(aligns))]
    blocks = [[]]
    for group in groups:
        if blocks[-1] and sum(widths[i] + 2 for i in [0, *blocks[-1], *group]
                              ) - 2 > console.WIDTH:
            blocks.append([])
        blocks[-1] += list(group)
    console.write(['  '.join(f'{row[i]:{aligns[i]}{widths[i]}}'
                             for i in [0] + block).rstrip()
                   for block in blocks for row in rows] + list(more), file)


def _shorten(key):
    if len(key) <= KEY_WIDTH:
        return key
    indent = len(key) - len(key.lstrip(' '))
    return key[:indent] + '...' + key[-(KEY_WIDTH - indent - 3):]

"""Text tables of timing summaries.

Two shapes: Chainer's ``TimerHook.print_report`` table (class names, right
aligned) and a tree keyed by link path or reporter name, each key indented
under its parent and shortened to its last component::

    LinkPath   ElapsedTime  SelfTime  Occurrence
    /             120.00us   20.00us           4
      predictor   100.00us   40.00us           4
        l1         30.00us   30.00us           4
        l2         30.00us   30.00us           4

The tree may have backward columns (``BackwardTime``, inclusive, and
``BackwardSelf``), and a last row ``(outside)`` with backward times only.
"""

from chainer_hookext import _units
from chainer_hookext.link_hooks import _timer_tree


def print_class_table(summary, unit, file):
    """Prints ``summary`` (by class) in the shape of Chainer's ``TimerHook``.

    Args:
        summary (dict): ``{class name: {'elapsed_time', 'occurrence'}}``.
        unit (str): A unit of :data:`chainer_hookext._units.UNITS`.
        file: Stream to write to.
    """
    fmt = _units.formatter(
        unit, [r['elapsed_time'] for r in summary.values()])
    rows = [['LinkName', 'ElapsedTime', 'Occurrence']]
    for key, record in summary.items():
        rows.append(
            [key, fmt(record['elapsed_time']), str(record['occurrence'])])
    _write(rows, '>>>', file)


def print_tree_table(summary, unit, file, header='LinkPath',
                     backward=False):
    """Prints ``summary`` (by path or name) as an indented tree.

    Args:
        summary (dict): ``{key: {'elapsed_time', 'self_time',
            'occurrence'}}`` with parents before their children, and
            ``'backward_time'``, ``'backward_self_time'`` for ``backward``.
        unit (str): A unit of :data:`chainer_hookext._units.UNITS`.
        file: Stream to write to.
        header (str): Title of the key column.
        backward (bool): Add the backward columns.
    """
    fields = ['elapsed_time', 'self_time']
    titles = [header, 'ElapsedTime', 'SelfTime']
    if backward:
        fields += ['backward_time', 'backward_self_time']
        titles += ['BackwardTime', 'BackwardSelf']
    fmt = _units.formatter(
        unit, [r[f] for r in summary.values() for f in fields[::2]])
    rows = [titles + ['Occurrence']]
    for label, record in zip(tree_labels(summary), summary.values()):
        row = [label] + [fmt(record[f]) for f in fields]
        row.append(str(record['occurrence']))
        if label == _timer_tree.OUTSIDE:  # no forward: blank its cells
            row[1] = row[2] = row[-1] = ''
        rows.append(row)
    _write(rows, '<' + '>' * (len(titles)), file)


def tree_labels(keys):
    """Returns the indented labels of ``keys`` (parents come first).

    >>> tree_labels(['/', '/predictor', '/predictor/l1', '/other/l2'])
    ['/', '  predictor', '    l1', '  other/l2']
    >>> tree_labels(['main/predictor/l1', 'main/predictor/l1/sub'])
    ['main/predictor/l1', '  sub']
    """
    depths = {}
    labels = []
    for key in keys:
        parent = _nearest_ancestor(key, depths)
        if parent is None:
            depth, label = 0, key
        else:
            depth = depths[parent] + 1
            label = key[len(parent):].lstrip('/')
        depths[key] = depth
        labels.append('  ' * depth + label)
    return labels


def _nearest_ancestor(key, known):
    # The longest proper prefix of ``key`` ending at a '/' (or '/' itself)
    # that is in ``known``.
    end = len(key)
    while True:
        end = key.rfind('/', 0, end)
        if end < 0 or key == '/':
            return None
        parent = key[:end] or '/'
        if parent in known:
            return parent
        if end == 0:
            return None


def _write(rows, aligns, file):
    widths = [max(len(row[i]) for row in rows) for i in range(len(aligns))]
    template = '  '.join(
        '{:%s%d}' % (align, width) for align, width in zip(aligns, widths))
    for row in rows:
        file.write(template.format(*row).rstrip())
        file.write('\n')
    file.flush()

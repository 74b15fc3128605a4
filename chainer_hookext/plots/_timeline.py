"""A Timeline file's first iteration as a flame chart (docs/timing.md,
"`Timeline`: a trace of chosen iterations")."""

import collections
import glob
import os
import re

from chainer_hookext.plots import _matplotlib
from chainer_hookext.plots import _text
from chainer_hookext.timing import trace


#: Timeline's categories, top to bottom where spans start together.
CATEGORIES = (('iteration', 'lightgray'), ('phase', 'tab:blue'),
              ('extension', 'tab:purple'), ('link_forward', 'tab:orange'),
              ('link_backward', 'tab:green'), ('function_forward', 'gold'),
              ('function_backward', 'yellowgreen'), ('gc', 'tab:red'))
COLOURS = dict(CATEGORIES)
OTHER_COLOUR = 'tab:gray'
#: Pixels under which a span gets no label (no character fits).
MIN_LABEL_WIDTH = 10

_WINDOW = re.compile(r'iteration_(\d+)(?:_rank(\d+))?\.json(?:\.gz)?$')


def first_trace(out):
    """Returns the first window trace (rank 0's, not an outlier's) a
    :class:`~chainer_hookext.Timeline` wrote under ``out``, or ``None``."""
    found = []
    for path in glob.glob(os.path.join(out, 'timeline', 'iteration_*')):
        match = _WINDOW.match(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), int(match.group(2) or 0),
                          path))
    return min(found)[2] if found else None


def first_iteration(events):
    """Returns ``(depth, event)`` of the first iteration's spans (depth 0)
    in its thread; of spans alike (a cut link span's piece and its
    parent's) the holder first."""
    order = {c: i for i, (c, _) in enumerate(CATEGORIES)}
    spans = [e for e in events if e.get('ph') == 'X']
    iterations = [e for e in spans if e['cat'] == 'iteration']
    if not iterations:
        return []
    first = min(iterations, key=lambda e: e['ts'])
    spans = [e for e in spans if e is first or e['cat'] != 'iteration'
             and (e['pid'], e['tid']) == (first['pid'], first['tid'])
             and first['ts'] <= e['ts'] < _end(first)]
    stack, depths = [], []
    for e in sorted(spans, key=lambda e: (
            e['ts'], -e['dur'], order.get(e['cat'], len(order)),
            link_depth(e))):
        while stack and _end(e) > _end(stack[-1]) + 1e-3:  # ts rounded
            stack.pop()
        depths.append((len(stack), e))
        stack.append(e)
    return depths


def link_depth(event):
    """Returns the depth of a span's ``args['link']``, else 0."""
    link = (event.get('args') or {}).get('link')
    return link.count('/') if isinstance(link, str) else 0


def _end(event):
    return event['ts'] + event['dur']


def timeline(trace_path):
    """Draws a :class:`~chainer_hookext.Timeline` file's first iteration.

    Args:
        trace_path (str): A ``.json.gz`` (or ``.json``) Timeline file.

    Returns:
        matplotlib.figure.Figure: ``None`` without an iteration.
    """
    modules = _matplotlib.require()
    spans = first_iteration(trace.read(trace_path))
    if not spans:
        return None
    rows = max(depth for depth, _ in spans) + 1
    fig = _matplotlib.new_figure((10, 0.45 * rows + 1.6))
    ax = fig.subplots()
    iteration = spans[0][1]
    ax.set_xlim(0, iteration['dur'] / 1e3)
    ax.set_ylim(rows, 0)  # the iteration at the top
    ax.set_yticks([])
    ax.set_xlabel(_text.escape(f"ms from the start of {iteration['name']}"))
    ax.set_title(_text.escape(
        'One training iteration, nested calls below their caller '
        f'(Timeline, {os.path.basename(trace_path)})'))
    shown = {e['cat'] for _, e in spans}
    ax.legend(handles=[
        modules.patches.Patch(color=COLOURS.get(c, OTHER_COLOUR),
                              label=_text.escape(c))
        for c in [c for c in COLOURS if c in shown] + sorted(
            shown - set(COLOURS))],
        loc='upper left', bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()  # before the labels: they are fitted to the boxes
    draw_boxes(ax, spans, iteration['ts'])
    renderer = fig.canvas.get_renderer()
    origin, one_ms = (ax.transData.transform((x, 0))[0] for x in (0, 1))
    for depth, e in spans:
        width = e['dur'] / 1e3
        label_span(ax, renderer, e['name'], (e['ts'] - iteration['ts']) / 1e3,
                   width, depth + 0.5, width * (one_ms - origin))
    return fig


def draw_boxes(ax, spans, origin):
    # A collection per category and depth: a patch per span is slow.
    rows = collections.OrderedDict()
    for depth, e in spans:
        rows.setdefault((e['cat'], depth), []).append(
            ((e['ts'] - origin) / 1e3, e['dur'] / 1e3))
    for (category, depth), boxes in rows.items():
        ax.broken_barh(boxes, (depth + 0.05, 0.9),
                       facecolors=COLOURS.get(category, OTHER_COLOUR),
                       edgecolors='white', linewidth=0.5)


def label_span(ax, renderer, name, start, width, y, pixels):
    if pixels < MIN_LABEL_WIDTH:
        return
    for label in (name, name.rsplit('/', 1)[-1]):
        text = ax.text(start + width / 2, y, _text.escape(label),
                       ha='center', va='center', fontsize=8, clip_on=True)
        if text.get_window_extent(renderer).width + 4 <= pixels:
            return
        text.remove()

"""One traced iteration's memory over time (docs/memory.md, "Memory over
the iteration")."""

from chainer_hookext.plots import _bars
from chainer_hookext.plots import _matplotlib
from chainer_hookext.plots import _text
from chainer_hookext.plots import _top

#: Bottom to top: the counter's field, label, colour.
CATEGORIES = (('params', 'parameters', 'tab:blue'),
              ('grads', 'gradients', 'tab:orange'),
              ('optimizer_state', 'optimizer state', 'tab:green'),
              ('activations', 'activations', 'tab:red'))
PEAK_GID = 'memory peak'


def memory_timeline(memory):
    """Draws a :class:`~chainer_hookext.profile.run.MemoryTrace`'s
    categories stacked, on a GPU the pool's used bytes, the peak a line;
    ``None`` without a point."""
    _matplotlib.require()
    points = memory.points
    if not points:
        return None
    fig = _matplotlib.new_figure((10, 4.2))
    ax = fig.subplots()
    times = [p.ms for p in points] + [memory.end_ms]
    sizes = {field: max(p.categories.get(field, 0) for p in points)
             for field, _, _ in CATEGORIES}
    shown = _top.largest(sizes)
    scale, unit = _bars.byte_unit(max(p.total for p in points) or 1)
    stacks = []
    for field, label, colour in CATEGORIES:
        if field not in shown:
            continue
        values = [p.categories.get(field, 0) / scale for p in points]
        stacks.append((values + values[-1:], label, colour))
    if stacks:
        ax.stackplot(times, *[v for v, _, _ in stacks], step='post',
                     labels=[_text.escape(l) for _, l, _ in stacks],
                     colors=[c for _, _, c in stacks], alpha=0.85)
    used = [p.pool_used for p in points]
    if all(u is not None for u in used):
        ax.step(times, [u / scale for u in used] + [used[-1] / scale],
                where='post', color='black', linewidth=1.2,
                label='CuPy pool (used)')
    peak = memory.peak
    if peak is not None:
        ax.axvline(peak.ms, color='black', linestyle='--', linewidth=1,
                   gid=PEAK_GID)
        ax.annotate(_text.escape(
            f'peak {peak.total / scale:.3g} {unit}: {peak.phase} of '
            f'{peak.where}'), (peak.ms, peak.total / scale),
            xytext=(4, 4), textcoords='offset points', fontsize=8)
    ax.set_xlim(0, memory.end_ms)
    ax.set_ylim(0, None)
    ax.set_xlabel(_text.escape(f'ms from the start of {memory.iteration}'))
    ax.set_ylabel(f'{unit} alive')
    ax.set_title(_text.escape(
        f'Memory over one traced iteration (Timeline(memory=True), '
        f'{memory.name})'))
    ax.legend(loc='upper left', bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig

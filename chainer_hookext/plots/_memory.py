"""LinkMemory's bytes of each link (docs/memory.md)."""

import numpy

from chainer_hookext.plots import _bars
from chainer_hookext.plots import _matplotlib
from chainer_hookext.report import keys


_FIGURES = {figure.field: figure for figure in keys.MEMORY_FIGURES}

#: The figures of the model's state, as drawn, and their fields.
MODEL_STATE = (('parameters', 'params'), ('gradients', 'grads'),
               ('optimizer\nstate', 'optimizer_state'))


def memory(log, names):
    """Draws :class:`~chainer_hookext.LinkMemory`'s bytes of each link:
    left, each link's own activations per log entry; right, the last
    entry's model state of each link, less its child links'.

    Args:
        log (list of dict): ``LogReport``'s entries.
        names (list of str): The links, bottom to top; past 20, the 19
            largest and ``N others``.

    Returns:
        matplotlib.figure.Figure: ``None`` when no entry has activations.
    """
    _matplotlib.require()
    colours = _bars.link_colours(names)
    names = [n for n in names if n != keys.OUTSIDE]
    series = [_bars.Series(n, _key(n, 'self_activations'), colours[n])
              for n in names] + [_bars.Series(
                  keys.OUTSIDE, _key(keys.OUTSIDE, 'activations'),
                  colours[keys.OUTSIDE])]
    log = _bars.reported(log, series)
    if not log:
        return None
    last = log[-1]
    state = [_bars.Layer(n, numpy.array(
        [own_bytes(last, names, n, field) for _, field in MODEL_STATE],
        float), colours[n]) for n in names
        if _key(n, 'params') in last]
    activations, state = _bars.named([_bars.layers(log, series), state])
    panels = 2 if state else 1
    fig = _matplotlib.new_figure((10 if state else 6.5, 4.2))
    axes = fig.subplots(1, panels, squeeze=False,
                        gridspec_kw={'width_ratios': (3, 2)[:panels]})[0]
    labels, step = _bars.steps(log)
    unit = _bars.stack_bytes(axes[0], activations)
    _bars.set_steps(axes[0], labels, step)
    axes[0].set_ylabel(f'{unit} in the measured iteration')
    axes[0].set_title('activations kept for backward')
    if state:
        axes[1].set_ylabel(_bars.stack_bytes(axes[1], state))
        axes[1].set_xticks(range(len(MODEL_STATE)))
        axes[1].set_xticklabels([kind for kind, _ in MODEL_STATE])
        axes[1].set_title(f'model state at {step} {labels[-1]}')
    fig.suptitle('Bytes held by each link itself, child links apart '
                 '(LinkMemory)')
    _bars.legend_beside(axes[-1], axes)
    fig.tight_layout()
    return fig


def own_bytes(entry, names, name, field):
    """Returns a link's figure in ``entry`` less its child links'."""
    children = [n for n in names if n.startswith(name + '/')
                and '/' not in n[len(name) + 1:]]
    return entry.get(_key(name, field), 0) - sum(
        entry.get(_key(n, field), 0) for n in children)


def _key(name, field):
    return keys.memory_key(name, _FIGURES[field])

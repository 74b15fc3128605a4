"""Pictures of a run's files, drawn with matplotlib (the ``plot`` extra).

Each function takes plain data (``LogReport``'s entries, ``link_times.json``,
a Timeline file) and returns a ``Figure`` on an Agg canvas, or ``None`` with
nothing to draw (docs/profile.md, "Pictures without the page").

>>> from chainer_hookext import plots
>>> log = [{'epoch': 1, 'iteration': 10, 'time/loop/iteration': 0.02,
...         'time/loop/data': 0.005, 'time/loop/forward': 0.015}]
>>> plots.png(plots.loop_time(log))[:8]
b'\\x89PNG\\r\\n\\x1a\\n'
>>> plots.loop_time([{'epoch': 1, 'main/loss': 0.5}]) is None
True
"""

from chainer_hookext.plots._changes import changes  # NOQA
from chainer_hookext.plots._files import png  # NOQA
from chainer_hookext.plots._files import save  # NOQA
from chainer_hookext.plots._functions import functions  # NOQA
from chainer_hookext.plots._link_statistics import activations  # NOQA
from chainer_hookext.plots._link_statistics import gradients  # NOQA
from chainer_hookext.plots._link_time import link_time  # NOQA
from chainer_hookext.plots._link_times import link_times  # NOQA
from chainer_hookext.plots._loop_time import loop_time  # NOQA
from chainer_hookext.plots._memory import memory  # NOQA
from chainer_hookext.plots._roofline import roofline  # NOQA
from chainer_hookext.plots._timeline import first_trace  # NOQA
from chainer_hookext.plots._timeline import timeline  # NOQA


__all__ = [
    'activations', 'changes', 'first_trace', 'functions', 'gradients',
    'link_time', 'link_times', 'loop_time', 'memory', 'png', 'roofline',
    'save', 'timeline']

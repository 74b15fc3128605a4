"""The trainer extension reporting the memory each link holds, measured
in one training iteration per report (docs/memory.md).
"""

import math
import sys
import warnings

import chainer
from chainer.training import extension

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _registry
from chainer_hookext import _state
from chainer_hookext.extensions import timed_links
from chainer_hookext.memory import figures
from chainer_hookext.memory import timeline as memory_timeline
from chainer_hookext.memory import tracer as tracer_module
from chainer_hookext.report import console
from chainer_hookext.report import gather
from chainer_hookext.report import keys
from chainer_hookext.report import link_names
from chainer_hookext.report import tables
from chainer_hookext.report import units
from chainer_hookext.run import iteration_plan
from chainer_hookext.run import link_hook_extension
from chainer_hookext.run import training_loop
from chainer_hookext.timing import pauses


class LinkMemory(extension.Extension):
    """Trainer extension reporting the memory each link of the model holds.

    It measures one training iteration per report, its hooks registered
    for that iteration only, and reports ``memory/<name>/activations``,
    ``.../forgettable``, ``.../params``, ``.../grads``,
    ``.../optimizer_state`` and, on a GPU, ``.../peak`` (docs/memory.md).

    Args:
        links (~chainer.Link or list of ~chainer.Link): Sub-trees to
            measure; ``None`` (default) the ``main`` optimizer's target.
        print_report (bool): Print the table at each trigger.
        comm (chainermn.CommunicatorBase): Rank 0 reports each key's spread
            over workers.
        local_report (bool): With ``comm``, other ranks report too.
        peak (bool): Also report ``memory/peak`` and
            ``memory/peak/<category>`` (docs/memory.md, "The peak").

    Attributes:
        last_ (list): The :class:`~chainer_hookext.memory.figures.LinkFigures`
            of the last report, ``(outside)`` last; ``None`` before.

    .. admonition:: Example

        >>> from chainer_hookext import LinkMemory
        >>> trainer.extend(LinkMemory(print_report=True),
        ...                trigger=(1, 'epoch'))
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_WRITER
    default_name = 'LinkMemory'

    def __init__(self, links=None, *, print_report=False, comm=None,
                 local_report=False, peak: bool = True):
        print_report, local_report, peak = (
            _checks.check_flag('LinkMemory', arg, value) for arg, value in (
                ('print_report', print_report),
                ('local_report', local_report), ('peak', peak)))
        if comm is not None:
            gather.check_comm('LinkMemory', comm)
        elif local_report:
            raise ValueError(
                '`LinkMemory(local_report=True)` needs `comm=`: without a '
                'communicator every report is local already.')
        self.links = link_hook_extension.as_links('LinkMemory', links)
        self.peak = peak
        self.print_report = print_report
        self.comm = comm
        self.local_report = local_report
        self.tracer = tracer_module.MemoryTracer()
        self.last_ = None
        self._trainer = None
        self._loop = None
        self._plan = None
        self._links = []  # [(name, link)] in scope, parents first
        self._armed = False  # measure the next iteration
        self._handle = None  # the tracer's registration, while measuring
        self._measured = None
        self._warned = False
        self._memory_timeline = None
        self._peak = None
        #: The last report's ``memory.timeline.Peak``, or ``None``.
        self.peak_ = None

    def initialize(self, trainer):
        self.release()
        _checks.check_one_per_trainer(
            trainer, self, 'measure the same iterations twice', 'use one '
            'LinkMemory, with `links=` naming every link to measure')
        ids = link_hook_extension.scope_link_names(
            'LinkMemory', self.links, trainer)
        model = link_names.model_link_names(trainer)
        link_names.warn_unhooked('LinkMemory', [model[i] for i in ids])
        keys.check_link_names('LinkMemory', ids.values(), False,
                              self.comm is not None, memory=True)
        if self.peak and keys.memory_peak_key()[len(keys.MEMORY) + 1:] in (
                ids.values()):
            raise ValueError(
                'LinkMemory: the link \'peak\' would report '
                f'`{keys.memory_peak_key("activations")}`, the memory '
                'peak\'s activations; rename the optimizer (its name in '
                'the updater), leave the link out with `links=`, or pass '
                '`peak=False`.')
        self.tracer.set_scope(ids, train=True, eval=False)
        self.tracer.owner = self.name or self.default_name
        self._links = [model[i] for i in ids]
        self.tracer.model = [link for _, link in model.values()]
        self._trainer = trainer
        self._measured = None
        self._warned = False
        self._armed = True
        self._plan = iteration_plan.IterationPlan.of(trainer)
        self._loop = training_loop.TrainingLoop.install(
            trainer, self._enter, self.release, self._iteration,
            self._iteration_ending)

    def _enter(self):
        pass  # the loop's start: the first iteration's start arms

    def _iteration(self, trainer):
        # Two attribute reads when not measuring.
        if self._handle is not None:  # no check of the stop trigger ran
            self._iteration_ending()
        if not self._armed or not self._plan.measure(
                trainer.updater.iteration + 1):
            return
        with pauses.own_work(self.tracer.owner):
            self._armed = False
            self.tracer.reset()
            # First: its work is told of before another hook reads the clock.
            self._handle = _registry.add(_chainer.link_hooks(), self.tracer,
                                         first=True)
            if self.peak:  # after the tracer: it reads the clock first
                self._memory_timeline = memory_timeline.MemoryTimeline(
                    link_names.model_link_names(trainer))
                self._memory_timeline.start()

    def _iteration_ending(self):
        # In the measured iteration's time, never the next (a Timeline's).
        if self._handle is not None:
            with pauses.own_work(self.tracer.owner):
                self._stop()

    def _stop(self, keep=True):
        handle, self._handle = self._handle, None
        timeline, self._memory_timeline = self._memory_timeline, None
        if timeline is not None:
            if keep:
                timeline.iteration_ended(self._trainer.updater.iteration)
            timeline.stop()
            self._peak = memory_timeline.peak_of(timeline) if keep else None
        _registry.remove(handle, self.tracer)
        if not keep:
            return
        if not self.tracer.parents:
            self._warn('called no link in scope (check `links=`)')
        elif self.tracer.activations is None:
            self._warn('ran no backward')
        else:
            self._measured = figures.link_figures(self._links, self.tracer)

    def _warn(self, what):
        if not self._warned:
            self._warned = True
            warnings.warn(
                f'LinkMemory: the measured training iteration {what}; nothing '
                'is reported for it.', RuntimeWarning)

    def __call__(self, trainer):
        if self._handle is not None:  # the measured iteration just ended
            self._stop()
        rows, self._measured = self._measured, None
        self._armed = True
        if rows is None and self.comm is None:
            return
        peak, self._peak = self._peak, None
        if rows is not None:
            self.last_, self.peak_ = rows, peak
        observation = {keys.memory_key(row.key, f): getattr(row, f.field)
                       for row in rows or () for f in keys.memory_figures(
                           row.key, self.tracer.gpu)}
        if rows is not None and peak is not None:
            observation[keys.memory_peak_key()] = _peak_bytes(peak)
            observation.update((keys.memory_peak_key(c), n)
                               for c, n in peak.point.categories.items())
        if self.comm is not None:  # every rank gathers, measured or not
            per_rank = gather.collect(self.comm, observation)
            if rows is None or per_rank is None and not self.local_report:
                return
            if per_rank is not None:
                observation = gather.spread_observation(per_rank)
        chainer.report(observation)
        self._print(rows, trainer)

    def _print(self, rows, trainer):
        if not self.print_report:
            return
        console.write([f'LinkMemory at iteration {trainer.updater.iteration}: '
                       'bytes of one training iteration'], sys.stdout)
        tables.print_memory_table(rows, sys.stdout, self.tracer.gpu)
        candidates = figures.forget_candidates(rows, _timed_links_times(
            trainer))
        if candidates:
            console.write(['F.forget candidates (bytes it frees per ms of '
                           'forward time): ' + ', '.join(
                               f'{c.key} {units.nbytes(c.bytes_per_ms)}/ms'
                               for c in candidates)], sys.stdout)
        peak = self.peak_summary()
        if peak is None:
            return
        lines = [
            f"Peak {units.nbytes(peak['bytes'])} at the {peak['phase']} "
            f"of {peak['where']}; largest: " + ', '.join(
                f'{link} {category} {units.nbytes(n)}'
                for category, link, n in peak['holders'])]
        if peak['forget']:
            lines.append('F.forget lowers the peak: ' + ', '.join(
                f'around {link} by {units.nbytes(n)}'
                for link, n in peak['forget']))
        console.write(lines, sys.stdout)

    def summary(self):
        """Returns the last report's rows as ``{key: {field: bytes}}``."""
        return {row.key: {f: getattr(row, f) for f in figures.FIELDS
                          if getattr(row, f) is not None}
                for row in self.last_ or ()}

    def peak_summary(self) -> dict:
        """Returns the last report's memory peak as a dict, or ``None``
        (docs/memory.md, "The peak")."""
        peak = self.peak_
        if peak is None:
            return None
        sample = peak.point.sample
        return {'bytes': _peak_bytes(peak), 'phase': sample.kind,
                'where': memory_timeline.where_of(sample),
                'categories': dict(peak.point.categories),
                'holders': [list(h) for h in peak.holders],
                'forget': [[s.link, s.nbytes] for s in peak.forget]}

    def release(self):
        """Unregisters the hooks, forgets the loop; safe to call again."""
        if self._handle is not None:
            self._stop(keep=False)
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.discard(self._enter)
        self._plan = None

    def on_error(self, trainer, exc, tb):
        self.release()

    def finalize(self):
        self.release()

    def serialize(self, serializer):
        """Saves or restores :attr:`last_`."""
        fields = figures.FIELDS + ('forward_time',)
        if not _state.is_loading(serializer):
            rows = self.last_ or []
            _state.save_rows(
                serializer['last'], [[r.key, r.parent] for r in rows],
                {f: [math.nan if getattr(r, f) is None else getattr(r, f)
                     for r in rows] for f in fields})
            return
        try:
            rows = _state.load_rows(_state.child(serializer, 'last'), fields)
        except _state.MissingState as e:
            _state.warn_missing(self.name or self.default_name, e,
                                'Its last report is not restored.')
            return
        self.last_ = [figures.LinkFigures(key=key, parent=parent, **{
            f: None if math.isnan(v) else v if f == 'forward_time' else int(v)
            for f, v in values.items()})
            for (key, parent), values in rows] or None


def _peak_bytes(peak):
    # On a GPU the pool's highest used bytes, counted at every malloc.
    used = peak.point.sample.pool_used
    return peak.point.total if used is None else max(peak.pool or 0, used)


def _timed_links_times(trainer):
    # {name: forward seconds per iteration} of the trainer's TimedLinks.
    for entry in _chainer.extension_entries(trainer).values():
        ext = entry.extension
        if isinstance(ext, timed_links.TimedLinks):
            rows = ext.hook.entries('name', 'train')
            calls = max([e.occurrence for e in rows if e.parent is None],
                        default=0)
            if calls:
                return {e.key: e.elapsed_time / calls for e in rows}
    return None

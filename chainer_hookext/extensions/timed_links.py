"""The trainer extension reporting each link's time (docs/timing.md,
"`TimedLinks`"; FLOPs: docs/flops.md)."""

import collections
import sys
import typing
import warnings

import chainer
from chainer.training import extension

from chainer_hookext import _checks
from chainer_hookext import _state
from chainer_hookext.costs import peaks as peaks_module
from chainer_hookext.costs import roofline as roofline_module
from chainer_hookext.link_hooks import timer
from chainer_hookext.report import console
from chainer_hookext.report import gather
from chainer_hookext.report import keys
from chainer_hookext.report import link_names
from chainer_hookext.report import tables
from chainer_hookext.report import units
from chainer_hookext.run import link_hook_extension
from chainer_hookext.timing import records


class TimedLinks(link_hook_extension.LinkHookExtension):
    """Trainer extension reporting the time of each link of the model.

    At each trigger it reports ``time/<name>``, ``time/<name>/self``,
    ``time/<name>/backward`` and ``time/<name>/backward/self`` per training
    iteration since the last report (docs/timing.md).

    Args:
        links (~chainer.Link or list of ~chainer.Link): Sub-trees to time;
            ``None`` (default) times the ``main`` optimizer's target.
        validation (bool): Also time ``Evaluator`` calls (``validation/``).
        print_report (bool): Print the per-link tree table at each trigger.
        unit (str): Unit of the printed table: ``'sec'``, ``'ms'``, ``'us'``,
            ``'ns'``, ``'auto'`` or ``'auto_foreach'``.
        comm (chainermn.CommunicatorBase): Gather every worker's figures
            on rank 0 (docs/chainermn.md).
        local_report (bool): With ``comm``, other ranks report too.
        backward (bool): Also time backward per link.
        flops (bool): Also count FLOPs and bytes per link.
        functions (bool): Also report figures per function type.
        peak_flops (float): Peak FLOP/s for the roofline; measured by
            default (docs/flops.md, "Peaks").
        peak_bandwidth (float): Peak bytes/s; measured by default.

    .. admonition:: Example

        >>> from chainer_hookext import TimedLinks
        >>> trainer.extend(TimedLinks(), trigger=(1, 'epoch'))
        >>> trainer.extend(extensions.LogReport())
        >>> trainer.extend(extensions.PrintReport(
        ...     ['epoch', 'main/loss', 'time/main', 'time/main/backward',
        ...      'time/main/predictor/l1/backward']))
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_WRITER
    default_name = 'TimedLinks'

    def __init__(self, links: typing.Union[
                     None, chainer.Link, typing.Sequence[chainer.Link]] = None,
                 *, validation: bool = False, print_report: bool = False,
                 unit: str = 'auto', comm: typing.Any = None,
                 local_report: bool = False, backward: bool = True,
                 flops: bool = False, functions: bool = False,
                 peak_flops: typing.Optional[float] = None,
                 peak_bandwidth: typing.Optional[float] = None) -> None:
        (self.validation, self.print_report, self.local_report, self.backward,
         self.flops, self.functions) = (
            _checks.check_flag('TimedLinks', arg, value) for arg, value in (
                ('validation', validation), ('print_report', print_report),
                ('local_report', local_report), ('backward', backward),
                ('flops', flops), ('functions', functions)))
        for arg, value in (('flops', self.flops),
                           ('functions', self.functions)):
            if value and not self.backward:
                raise ValueError(
                    f'`TimedLinks({arg}=True, backward=False)`: the function '
                    'hook that times backward does it; keep `backward=True`.')
        for arg, value in (('peak_flops', peak_flops),
                           ('peak_bandwidth', peak_bandwidth)):
            if value is not None and not self.flops:
                raise ValueError(
                    f'`TimedLinks({arg}={value!r})` needs `flops=True`: '
                    'peaks serve the roofline of the FLOPs counted.')
        units.check_unit('TimedLinks', unit)
        if comm is not None:
            gather.check_comm('TimedLinks', comm)
        elif self.local_report:
            raise ValueError(
                '`TimedLinks(local_report=True)` needs `comm=`: without a '
                'communicator every report is local already.')
        super().__init__(
            timer.TimerHook(name='TimedLinks', backward=self.backward,
                            flops=self.flops, functions=self.functions),
            links, train=True, eval=self.validation)
        self.peak_flops = None if peak_flops is None else (
            _checks.check_positive('TimedLinks', 'peak_flops', peak_flops))
        self.peak_bandwidth = None if peak_bandwidth is None else (
            _checks.check_positive('TimedLinks', 'peak_bandwidth',
                                   peak_bandwidth))
        self.roofline_ = None
        self._peaks_from = None  # optimizers whose parameters are awaited
        self.unit = unit
        self.comm = comm
        self._names = []
        self._last_iteration = None
        self._baseline = {}  # {mode: [Entry]} at the last report
        self._function_baseline = {}  # {mode: [FunctionEntry]}

    @property
    def _modes(self):
        return records.MODES if self.validation else ('train',)

    def initialize(self, trainer: chainer.training.Trainer) -> None:
        _checks.check_one_per_trainer(
            trainer, self, 'overwrite its keys', 'use one TimedLinks, with '
            '`links=` naming every link to time')
        names = self.scope_link_names(trainer)
        model = link_names.model_link_names(trainer)
        link_names.warn_unhooked('TimedLinks', [model[i] for i in names])
        keys.check_link_names('TimedLinks', names.values(), self.backward,
                              spread=self.comm is not None,
                              functions=self.functions)
        super().initialize(trainer)
        optimizers = trainer.updater.get_all_optimizers()
        for name, optimizer in optimizers.items():
            self.hook.add_root(
                optimizer.target, '/' if len(optimizers) == 1 else '/' + name)
        self._names = list(names.values())
        del self.hook.added_links[:]  # names of another run's scope
        if self.flops:
            self._set_roofline(optimizers, last_chance=False)
        if self._last_iteration is None or (
                trainer.updater.iteration < self._last_iteration):
            self._start(trainer)

    def _set_roofline(self, optimizers, last_chance):
        # Measured for the first parameter initialised (``L.Linear(None,
        # n)``: at the first report); float32 on the CPU at last.
        given = peaks_module.Peaks(self.peak_flops, self.peak_bandwidth)
        if None not in given:
            measured = given
        else:
            param = next((p for o in optimizers.values()
                          for p in o.target.params()
                          if p.array is not None), None)
            if param is None and not last_chance:
                self._peaks_from = optimizers  # measured later
                return
            measured = peaks_module.measure_for(param)
        self._peaks_from = None
        self.roofline_ = roofline_module.Roofline(peaks_module.Peaks(*(
            m if g is None else g for g, m in zip(given, measured))),
            'TimedLinks')

    def _register(self):
        # ``snapshot(autoload=True)`` without our state left no start.
        if self._entry is not None:
            if self._last_iteration is None:
                self._start(self._entry.trainer)
            self.hook.set_iteration_parts(self._entry.parts)
        super()._register()

    def release(self) -> None:
        """Unregisters the hook, forgets the loop; safe to call again."""
        try:
            super().release()
        finally:
            self.hook.set_iteration_parts(None)

    def _start(self, trainer):
        self.hook.reset()
        self._last_iteration = trainer.updater.iteration
        self._baseline, self._function_baseline = self._totals()

    def _totals(self):
        return ({mode: self.hook.entries('name', mode)
                 for mode in self._modes},
                {mode: self.hook.function_entries('name', mode)
                 for mode in self._modes} if self.functions else {})

    def __call__(self, trainer: chainer.training.Trainer) -> None:
        iteration = trainer.updater.iteration
        self._add_links(iteration)
        if self._peaks_from is not None:
            self._set_roofline(self._peaks_from, last_chance=True)
        totals, function_totals = self._totals()
        reports = [report for report in (
            self._report(mode, totals[mode], iteration,
                         function_totals.get(mode, ()))
            for mode in self._modes) if report is not None]
        self._baseline = totals
        self._function_baseline = function_totals
        self._last_iteration = iteration
        if self.comm is not None:
            gathered = gather.gather(self.comm, reports, self.backward,
                                     flops=self.flops,
                                     functions=self.functions)
            if gathered is not None:
                self._report_gathered(gathered, iteration)
                return
            if not self.local_report:
                return
        chainer.report({key: value for report in reports for key, value in
                        keys.figures(report, self.backward,
                                     self.flops).items()})
        if not self.print_report:
            return
        for report in reports:
            what = 'iterations' if report.mode == 'train' else 'calls'
            how = f', averaged over {report.per} {what}'
            console.write([_title(report.mode, iteration, how)], sys.stdout)
            entries = [e for e in report.entries if e.key != keys.OUTSIDE
                       or e.backward_time > 0]
            tables.print_tree_table(
                entries, self.unit, sys.stdout, header='LinkName',
                backward=keys.backward_reported(report.mode, self.backward),
                points=None if self.roofline_ is None else
                self.roofline_.link_points(entries))
            if self.functions:
                self_times = collections.OrderedDict(
                    (e.key, (e.self_time, e.backward_self_time))
                    for e in report.entries)
                self_times.setdefault(keys.OUTSIDE, (0.0, 0.0))
                tables.print_function_table(
                    report.functions, self_times, self.unit, sys.stdout,
                    backward=keys.backward_reported(
                        report.mode, self.backward), flops=self.flops)
        unknown = self.flops and self.unknown_functions(by='name')
        if unknown:
            console.write([
                'Function types without a FLOP formula (not counted):'] + [
                f"  {name}: {found['nodes']} nodes, in "
                f"{', '.join(found['links'])} "
                f"({100.0 * found['time_share']:.1f}% of the time)"
                for name, found in unknown.items()], sys.stdout)

    def _add_links(self, iteration):
        added, self.hook.added_links[:] = list(self.hook.added_links), []
        for link in added:
            if link.name in self._names:
                continue
            try:
                keys.check_link_names(
                    'TimedLinks', self._names + [link.name], self.backward,
                    spread=self.comm is not None, functions=self.functions)
            except ValueError as e:
                warnings.warn(f'{e} It was added to the model during '
                              'training and is not reported.', RuntimeWarning)
                continue
            link_names.insert_added(self._names, link.name, link.parent)
            since = ('training started' if self._last_iteration is None
                     else f'iteration {self._last_iteration}')
            warnings.warn(
                f'TimedLinks: the link {link.name!r} was added to the model '
                f'during training; its figures are reported from iteration '
                f'{iteration} on (its calls since {since}), and its '
                "parent's figures include them.", RuntimeWarning)

    def _report(self, mode, totals, iteration, function_totals):
        now = {e.key: e for e in totals}
        then = {e.key: e for e in self._baseline.get(mode, ())}
        per = iteration - self._last_iteration if mode == 'train' else (
            _model_calls(now.values()) - _model_calls(then.values()))
        if per <= 0:
            return None
        names = list(self._names)
        if keys.backward_reported(mode, self.backward):
            names.append(keys.OUTSIDE)
        return keys.Report(mode, per, [
            records.empty_entry(key) if key not in now else records.Entry(
                key=key, parent=now[key].parent, **_since(
                    now[key], then.get(key), records.FIELDS, per))
            for key in names], _function_differences(
                function_totals, self._function_baseline.get(mode, ()),
                set(names) | {keys.OUTSIDE}, per))

    def _report_gathered(self, gathered, iteration):
        chainer.report({key: value for report in gathered
                        for key, value in gather.figures(report).items()})
        if not self.print_report:
            return
        for report in gathered:
            console.write([_title(report.mode, iteration,
                                  f' over {report.workers} workers')],
                          sys.stdout)
            tables.print_spread_table(
                [e for e in report.entries if e.key != keys.OUTSIDE
                 or e.spreads['backward_time'].max > 0], self.unit,
                sys.stdout, header='LinkName',
                backward=keys.backward_reported(report.mode, self.backward))

    def summary(self, by: str = 'path', mode: typing.Optional[str] = 'train'
                ) -> typing.Dict[str, dict]:
        """Returns the run's summary, as :meth:`TimerHook.summary()
        <chainer_hookext.TimerHook.summary>`."""
        return self.hook.summary(by=by, mode=mode)

    def function_summary(self, mode: typing.Optional[str] = 'train'
                         ) -> typing.Dict[str, dict]:
        """Returns ``{type: {'time', 'backward_time', 'occurrence'}}``
        (``flops`` too with ``flops=True``), largest time first."""
        fields = [f for f in records.FUNCTION_FIELDS
                  if self.flops or f not in ('flops', 'backward_flops')]
        totals = sorted(keys.function_totals(
            self.hook.function_entries('name', mode)),
            key=lambda row: -(row.time + row.backward_time))
        return collections.OrderedDict(
            (row.function, {f: getattr(row, f) for f in fields})
            for row in totals)

    def roofline(self, by: str = 'path', mode: typing.Optional[str] = 'train'
                 ) -> typing.Dict[str, roofline_module.LinkPoints]:
        """Returns ``{key: LinkPoints}`` over the run (docs/flops.md, "The
        roofline")."""
        if self._peaks_from is not None:
            self._set_roofline(self._peaks_from, last_chance=True)
        if self.roofline_ is None:
            why = ('pass `flops=True` to count FLOPs' if not self.flops
                   else 'the peaks are set when training starts; call it '
                   'after trainer.run() or from a trigger')
            raise RuntimeError(f'TimedLinks.roofline: {why}.')
        return self.roofline_.link_points(
            self.hook.entries(by=by, mode=mode))

    def unknown_functions(self, by: str = 'path',
                          mode: typing.Optional[str] = 'train'
                          ) -> typing.Dict[str, dict]:
        """Returns ``{class name: {'nodes', 'links', 'time_share'}}`` of
        the function types whose FLOPs are not counted."""
        found = self.hook.unknown_functions(by=by, mode=mode)
        rows = self.hook.entries(by=by, mode=mode)
        whole = sum(e.self_time + e.backward_self_time for e in rows)
        times = {e.key: e.self_time + e.backward_self_time for e in rows}
        return collections.OrderedDict((name, {
            'nodes': sum(links.values()), 'links': dict(links),
            'time_share': sum(times.get(k, 0.0) for k in links) / whole
            if whole > 0 else 0.0}) for name, links in found.items())

    def serialize(self, serializer: chainer.AbstractSerializer) -> None:
        """Saves or restores the hook's figures and the last report's."""
        if not _state.is_loading(serializer):
            self.hook.serialize(serializer['hook'])
            last = self._last_iteration
            serializer('last_iteration', -1 if last is None else last)
            _save_by_mode(serializer['baseline'], self._baseline,
                          records.FIELDS, lambda e: [e.key, e.parent])
            _save_by_mode(serializer['function_baseline'],
                          self._function_baseline, records.FUNCTION_FIELDS,
                          lambda row: [row.link, row.function])
            return
        try:
            self.hook.serialize(_state.child(serializer, 'hook'))
            last = int(_state.read(serializer, 'last_iteration'))
            rows = _state.load_rows(
                _state.child(serializer, 'baseline'), records.FIELDS,
                records.COST_FIELDS)  # older snapshots: none counted
        except _state.MissingState as e:
            _state.warn_missing(self.name or self.default_name, e,
                                'Timing starts afresh.')
            self._last_iteration = None  # initialize starts a new run
            return
        self._last_iteration = None if last < 0 else last
        self._baseline = _load_by_mode(rows, records.Entry)
        try:  # older snapshots: no function types timed
            rows = _state.load_rows(_state.child(
                serializer, 'function_baseline'), records.FUNCTION_FIELDS)
        except _state.MissingState:
            rows = []
        self._function_baseline = _load_by_mode(rows, records.FunctionEntry)


def _model_calls(entries):
    # An unhooked model's top children: the largest count, not their sum.
    return max([e.occurrence for e in entries
                if e.parent is None and e.key != keys.OUTSIDE], default=0)


def _since(now, then, fields, per):
    # ``now``'s fields less ``then``'s, the times divided by ``per``.
    values = {}
    for field in fields:
        delta = getattr(now, field) - (0 if then is None else getattr(
            then, field))
        values[field] = delta if field == 'occurrence' else max(
            delta, 0.0) / per
    return values


def _save_by_mode(serializer, rows_by_mode, fields, labels_of):
    rows = [(mode, row) for mode, rows in rows_by_mode.items()
            for row in rows]
    _state.save_rows(serializer, [[mode] + labels_of(row)
                                  for mode, row in rows],
                     {f: [getattr(row, f) for _, row in rows]
                      for f in fields})


def _load_by_mode(rows, make):
    by_mode = {}
    for (mode, *labels), values in rows:
        values['occurrence'] = int(values['occurrence'])
        by_mode.setdefault(mode, []).append(make(*labels, **values))
    return by_mode


def _function_differences(now, then, links, per):
    before = {(row.link, row.function): row for row in then}
    return [row._replace(**_since(
        row, before.get((row.link, row.function)), records.FUNCTION_FIELDS,
        per)) for row in now if row.link in links]


def _title(mode, iteration, how):
    what = ('seconds per training iteration' if mode == 'train' else
            'seconds per evaluation call of the model')
    return f'TimedLinks at iteration {iteration}: {what}{how}'

import collections
import sys
import threading
import typing
import warnings

import chainer

from chainer_hookext import _checks
from chainer_hookext import _state
from chainer_hookext import _tagging
from chainer_hookext.link_hooks import scoped_link_hook
from chainer_hookext.report import keys
from chainer_hookext.report import tables
from chainer_hookext.report import units
from chainer_hookext.costs import counter
from chainer_hookext.run import iteration_parts
from chainer_hookext.timing import backward as backward_module
from chainer_hookext.timing import call_stack
from chainer_hookext.timing import marks as marks_module
from chainer_hookext.timing import pauses
from chainer_hookext.timing import records
from chainer_hookext.timing import spans


_BY = {'path': 'path', 'name': 'name', 'class': 'class_name'}
_MODES = {None: records.MODES, **{m: (m,) for m in records.MODES}}
#: What a snapshot keeps: ``{column: record attribute}``.
_SAVED = {'elapsed_time': 'elapsed', 'occurrence': 'count',
          'backward_time': 'backward', 'flops': 'flops', 'bytes': 'bytes',
          'backward_flops': 'backward_flops',
          'backward_bytes': 'backward_bytes'}
#: Columns a snapshot of an earlier version lacks: they load as zeros.
_ADDED = ('flops', 'bytes', 'backward_flops', 'backward_bytes')
_BACKWARD_TIMERS = {
    (False, False): backward_module.BackwardTimer,
    (True, False): counter.FlopCounter,
    (False, True): backward_module.FunctionTimer,
    (True, True): counter.FunctionFlopCounter,
}
_FUNCTION_SAVED = ('forward', 'count', 'backward', 'flops', 'backward_flops')
_SAVED_OUTSIDE = {column: attribute for column, attribute in _SAVED.items()
                  if column.startswith('backward')}


class TimerHook(call_stack.CallStack, scoped_link_hook.ScopedLinkHook):
    """Link hook timing :meth:`Link.forward() <chainer.Link.forward>` per link.

    In place of :class:`chainer.link_hooks.TimerHook` (all but its
    ``call_history``), adding self times, link paths, modes, backward,
    FLOPs and function types: docs/timing.md, "`TimerHook`".

    Args:
        name (str): Name of the hook; ``'TimerHook'`` by default.
        backward (bool): Also time backward per link.
        flops (bool): Also count FLOPs and bytes (needs ``backward``).
        functions (bool): Also split figures by function type (needs
            ``backward``).

    .. admonition:: Example

        >>> from chainer_hookext import TimerHook
        >>> x = numpy.zeros((8, 4), numpy.float32)
        >>> t = numpy.zeros(8, numpy.int32)
        >>> hook = TimerHook()
        >>> with hook:
        ...     loss = model(x, t)  # L.Classifier(MLP())
        >>> list(hook.summary(by='path'))
        ['/', '/predictor', '/predictor/l1', '/predictor/l2']
        >>> list(hook.summary())  # as Chainer's TimerHook
        ['Linear', 'MLP', 'Classifier']
        >>> hook.print_report(by='path')  # doctest: +SKIP
        LinkPath     ElapsedTime  SelfTime  Occurrence
        /               775.09us  368.71us           1
          predictor     406.38us  106.09us           1
            l1          228.93us  228.93us           1
            l2           71.37us   71.37us           1

        Backward too:

        >>> hook = TimerHook(backward=True)
        >>> with hook:
        ...     model(x, t).backward()
        >>> summary = hook.summary(by='path')
        >>> sorted(summary['/predictor'])
        ['backward_self_time', 'backward_time', 'elapsed_time', \
'occurrence', 'self_time']
        >>> total = sum(e['backward_self_time'] for e in summary.values())
        >>> total == hook.total_backward_time() > 0
        True
    """

    name = 'TimerHook'
    table = dict(units.FACTORS)

    def __init__(self, *, name: typing.Optional[str] = None,
                 backward: bool = False, flops: bool = False,
                 functions: bool = False) -> None:
        if name is not None:
            self.name = _checks.check_name('TimerHook', 'name', name)
        self.backward, self.flops, self.functions = (
            _checks.check_flag('TimerHook', arg, value) for arg, value in (
                ('backward', backward), ('flops', flops),
                ('functions', functions)))
        for arg, value in (('flops', flops), ('functions', functions)):
            if value and not backward:
                raise ValueError(
                    f'`TimerHook({arg}=True)` needs `backward=True`: the '
                    'function hook that times backward does it.')
        call_stack.CallStack.__init__(self)
        self._stored = {mode: records.CallRecord() for mode in _MODES[None]}
        self._backward_timer = None
        self._pause_listeners = None  # the timed thread's, from added
        self._warned_gpu_functions = False

    def added(self, link: typing.Optional[chainer.Link]) -> None:
        """Starts timing in the calling thread (and backward, if asked)."""
        super().added(link)
        self.thread = threading.get_ident()
        self._pause_listeners = pauses.listen(self)
        if not self.backward:
            return
        new = self._backward_timer is None
        self._backward_timer = _tagging.register(
            self._backward_timer, _BACKWARD_TIMERS[self.flops, self.functions],
            self, self.name + '_backward')
        if new and self.gpu:
            self._backward_timer.use_gpu(True)
            self._warn_gpu_functions()

    def deleted(self, link: typing.Optional[chainer.Link]) -> None:
        """Keeps the figures, and lets go of every link it referred to."""
        handle, self._pause_listeners = self._pause_listeners, None
        pauses.stop_listening(handle)
        self._backward_timer = _tagging.unregister(self._backward_timer)
        self.store(self._stored)
        self.thread = None
        super().deleted(link)

    def set_iteration_parts(
            self, parts: typing.Optional[iteration_parts.IterationParts]
    ) -> None:
        """Takes each call's mode from where it runs in the loop of
        ``parts``, or from ``chainer.config.train`` when ``None``
        (docs/timing.md, "Which calls count")."""
        if self.parts is not None:
            self.parts.remove_callback(self._update_changed)
        self.parts = parts
        if parts is not None:
            parts.add_callback(self._update_changed)
        self._update_changed()

    def _update_changed(self, in_update=None):
        timer = self._backward_timer
        if timer is not None:
            timer.paused = paused = self.outside_update()
            timer.marks = None if paused else self.phase_marks()
            timer.forget_running()

    def phase_marks(self) -> typing.Optional[marks_module.PhaseMarks]:
        """The loop's phase marks taking the host clock's reads, or None."""
        marks = None if self.gpu or self.parts is None else (
            self.parts.phase_marks)
        return None if marks is None or marks.reader not in (
            None, self) else marks

    def start_spans(self, recording: spans.Recording) -> None:
        """Keeps each timed call's and step's span in ``recording``."""
        super().start_spans(recording)
        if self._backward_timer is not None:
            self._backward_timer.start_spans(
                recording.backward,
                recording.functions if self.functions else None)

    def stop_spans(self) -> None:
        """Stops keeping spans; safe to call when none are kept."""
        super().stop_spans()
        if self._backward_timer is not None:
            self._backward_timer.stop_spans()

    def set_scope(self, link_names: typing.Optional[
                      typing.Mapping[int, str]] = None,
                  train: bool = True, eval: bool = True) -> None:
        """As :class:`ScopedLinkHook`'s; the figures so far are kept."""
        self.store(self._stored, forget_paths=False)
        super().set_scope(link_names, train=train, eval=eval)

    def add_root(self, link: chainer.Link, path: str = '/') -> None:
        """Takes the paths of ``link``'s tree from ``link``, not from each
        call's outermost link, until the hook is next removed.

        Args:
            link (~chainer.Link): The root.
            path (str): Its path; made unique (``'/#2'``) when another root
                has it.
        """
        if not isinstance(link, chainer.Link):
            raise TypeError(f'`TimerHook.add_root(link={link!r})` needs a '
                            'chainer.Link, e.g. the model.')
        if not isinstance(path, str):
            raise TypeError(
                f"`TimerHook.add_root(path={path!r})` is not a str: use a "
                "path starting with '/', e.g. '/' or '/gen'.")
        if not path.startswith('/'):
            raise ValueError(
                f"`TimerHook.add_root(path={path!r})` needs a path starting "
                "with '/', e.g. '/' or '/gen'.")
        self.paths.add_root(link, path)

    def paused(self, name: str, start: float, end: float) -> None:
        """Takes a pause of our own work out of the running calls."""
        super().paused(name, start, end)
        if self._backward_timer is not None:
            self._backward_timer.own_work_done(start, end)

    def device_changed(self, gpu: bool) -> None:
        if self._backward_timer is not None:
            self._backward_timer.use_gpu(gpu)
            self._warn_gpu_functions()
        super().device_changed(gpu)

    def _warn_gpu_functions(self):
        # The split by function type is on the host clock only.
        if self.functions and self.gpu and not self._warned_gpu_functions:
            self._warned_gpu_functions = True
            warnings.warn(
                f'{self.name}(functions=True): the model runs on a GPU, where '
                'the time of each function node is not measured (it would '
                'need a CUDA event pair per node); the figures by function '
                'type stay empty.', RuntimeWarning)

    def flush(self) -> None:
        """Ends calls left open, resolves CUDA events (timed thread only)."""
        if self.thread in (None, threading.get_ident()):
            self.flush_calls()

    def _merged(self, call, mode):
        _checks.check_choice(call, 'mode', mode, records.MODES + (None,),
                             'a mode (None: both)')
        self.flush()
        root = records.CallRecord()
        for m in _MODES[mode]:
            records.merge(self._stored[m], root)
            records.merge(self.trees[m], root)
        return root

    def _by_link(self, call, by, mode):
        _checks.check_choice(call, 'by', by, ('path', 'name'),
                             'a way to key the links')
        return self._merged(call, mode)

    def _outside(self, mode):
        outside = records.CallRecord()
        for m in _MODES[mode]:
            outside.backward += self.outside[m].backward
            records.add_costs(self.outside[m], outside)
        return outside

    def total_time(self, mode: typing.Optional[str] = None) -> float:
        """Returns the seconds spent in outermost timed calls in ``mode``
        (``'train'``, ``'eval'`` or ``None``: both)."""
        root = self._merged('TimerHook.total_time', mode)
        return sum(r.elapsed for r in root.children.values())

    def total_calls(self, mode: typing.Optional[str] = None) -> int:
        """Returns the number of outermost timed calls."""
        root = self._merged('TimerHook.total_calls', mode)
        return sum(r.count for r in root.children.values())

    def total_backward_time(self, mode: typing.Optional[str] = None
                            ) -> float:
        """Returns the backward steps' seconds, ``'(outside)'`` included."""
        root = self._merged('TimerHook.total_backward_time', mode)
        return sum(r.backward for _, r in records.walk(root)) + (
            self._outside(mode).backward)

    def entries(self, by: str = 'path', mode: typing.Optional[str] = None
                ) -> typing.List[records.Entry]:
        """Returns the summary as :class:`~.records.Entry` rows (``key``,
        ``parent``: the first caller's key, :meth:`summary`'s fields)."""
        _checks.check_choice('TimerHook.summary', 'by', by, tuple(_BY),
                             'a way to key the summary')
        root = self._merged('TimerHook.summary', mode)
        if by == 'class':
            return records.class_entries(root)
        rows = records.entries(root, _BY[by])
        out = self._outside(mode)
        if out.backward > 0 or out.backward_flops or out.functions:
            rows.append(records.empty_entry(keys.OUTSIDE)._replace(
                backward_time=out.backward, backward_self_time=out.backward,
                backward_flops=out.backward_flops,
                backward_self_flops=out.backward_flops,
                backward_bytes=out.backward_bytes))
        return rows

    def function_entries(self, by: str = 'path',
                         mode: typing.Optional[str] = None
                         ) -> typing.List[records.FunctionEntry]:
        """Returns each link's self figures by function type
        (``functions=True``; none without), as
        :class:`~.records.FunctionEntry` rows in order of first call,
        ``'(outside)'`` last; ``by``: ``'path'`` or ``'name'``."""
        root = self._by_link('TimerHook.function_entries', by, mode)
        return records.function_entries(root, by, self._outside(mode))

    def unknown_functions(self, by: str = 'path',
                          mode: typing.Optional[str] = None
                          ) -> typing.Dict[str, typing.Dict[str, int]]:
        """Returns the function types counted without a formula (their
        FLOPs and bytes are not in the figures): ``{class name: {link key:
        nodes}}`` by first occurrence; ``by``: ``'path'`` or ``'name'``."""
        root = self._by_link('TimerHook.unknown_functions', by, mode)
        found = collections.OrderedDict()
        counted = [(getattr(r.labels, by), r) for _, r in records.walk(root)]
        counted.append((keys.OUTSIDE, self._outside(mode)))
        for key, rec in counted:
            for name, nodes in (rec.unknown or {}).items():
                links = found.setdefault(name, collections.OrderedDict())
                links[key] = links.get(key, 0) + nodes
        return found

    def summary(self, by: str = 'class', mode: typing.Optional[str] = None
                ) -> typing.Dict[str, dict]:
        """Returns a summary of the times of links.

        Args:
            by (str): ``'class'`` (as Chainer's ``TimerHook``), ``'path'``
                or ``'name'`` (:meth:`set_scope`'s names; paths without).
            mode (str): ``'train'``, ``'eval'`` or ``None`` (both).

        Returns:
            collections.OrderedDict: ``{key: {'elapsed_time', 'self_time',
            'occurrence', ...}}``: docs/timing.md, "`TimerHook`".
        """
        fields = records.FIELDS
        if by == 'class':  # as Chainer's: no backward times
            backward = {f.field for f in keys.FIGURES if f.backward}
            fields = [f for f in fields if f not in backward]
        if by == 'class' or not self.flops:
            fields = [f for f in fields if f not in records.COST_FIELDS]
        out = collections.OrderedDict(
            (e.key, {f: getattr(e, f) for f in fields})
            for e in self.entries(by, mode))
        if by != 'class' and self.functions:
            _add_functions(out, self.function_entries(by, mode), self.flops)
        return out

    def print_report(self, unit: str = 'auto',
                     file: typing.Optional[typing.TextIO] = None, *,
                     by: str = 'class',
                     mode: typing.Optional[str] = None) -> None:
        """Prints the summary as a table (see :meth:`summary`).

        Args:
            unit (str): ``'sec'``, ``'ms'``, ``'us'``, ``'ns'``, ``'auto'``
                or ``'auto_foreach'`` (a unit for each time).
            file: Stream to write to; ``sys.stdout`` by default.
            by (str): ``'class'`` (Chainer's table), ``'path'`` or
                ``'name'`` (an indented tree).
            mode (str): ``'train'``, ``'eval'`` or ``None`` (both).
        """
        units.check_unit('TimerHook.print_report', unit)
        entries = self.entries(by=by, mode=mode)
        file = sys.stdout if file is None else file
        if by == 'class':
            tables.print_class_table(entries, unit, file)
        else:
            header = 'LinkPath' if by == 'path' else 'LinkName'
            tables.print_tree_table(
                entries, unit, file, header, backward=self.backward,
                top=None)
            if self.functions:
                self_times = collections.OrderedDict(
                    (e.key, (e.self_time, e.backward_self_time))
                    for e in entries)
                self_times.setdefault(keys.OUTSIDE, (0.0, 0.0))
                tables.print_function_table(
                    self.function_entries(by, mode), self_times, unit, file,
                    backward=True, flops=self.flops, top=None)

    def serialize(self, serializer: chainer.AbstractSerializer) -> None:
        """Saves or restores (replacing) all times and counts.

        Raises:
            KeyError: Loading a snapshot without the hook's state
                (``_state.MissingState``); the figures are kept.
        """
        if not _state.is_loading(serializer):
            labels, columns = [], {column: [] for column in _SAVED}
            for mode in _MODES[None]:
                for depth, rec in records.walk(self._merged(None, mode)):
                    labels.append([mode, depth] + list(rec.labels))
                    for column, attribute in _SAVED.items():
                        columns[column].append(getattr(rec, attribute))
            _state.save_rows(serializer['calls'], labels, columns)
            _state.save_rows(serializer['outside'], list(_MODES[None]), {
                column: [getattr(self.outside[m], attribute)
                         for m in _MODES[None]]
                for column, attribute in _SAVED_OUTSIDE.items()})
            self._save_by_type(serializer)
            return
        calls = _state.load_rows(
            _state.child(serializer, 'calls'), tuple(_SAVED), _ADDED)
        outside = _state.load_rows(
            _state.child(serializer, 'outside'), tuple(_SAVED_OUTSIDE),
            _ADDED)
        unknown = _load_by_type(serializer, 'unknown', ('nodes',))
        functions = _load_by_type(serializer, 'functions', _FUNCTION_SAVED)
        self.reset()
        self._stored = _trees_from_rows(calls)
        for mode, values in outside:
            for column, attribute in _SAVED_OUTSIDE.items():
                setattr(self.outside[mode], attribute, _number(
                    attribute, values[column]))
        saved = self._saved_records(self._stored)
        for rec, name, values in _by_record(saved, unknown, 'unknown'):
            if rec.unknown is None:
                rec.unknown = {}
            rec.unknown[name] = int(values['nodes'])
        for rec, name, values in _by_record(saved, functions, 'function'):
            one = records.function_record(rec, name)
            for attribute in _FUNCTION_SAVED:
                setattr(one, attribute, getattr(one, attribute) + _number(
                    attribute, values[attribute]))

    def _saved_records(self, trees):
        # What rows by type index: the call rows' records, then outsides.
        return [r for m in _MODES[None] for _, r in records.walk(
            trees[m])] + [self.outside[m] for m in _MODES[None]]

    def _save_by_type(self, serializer):
        # Rows [record index, class name]: unknown nodes, figures by type.
        saved = self._saved_records(
            {m: self._merged(None, m) for m in _MODES[None]})
        labels, nodes, function_labels = [], [], []
        function_columns = {column: [] for column in _FUNCTION_SAVED}
        for index, rec in enumerate(saved):
            for name, count in (rec.unknown or {}).items():
                labels.append([index, name])
                nodes.append(count)
            for one in (rec.functions or {}).values():
                function_labels.append([index, one.name])
                for column in _FUNCTION_SAVED:
                    function_columns[column].append(getattr(one, column))
        _state.save_rows(serializer['unknown'], labels, {'nodes': nodes})
        _state.save_rows(serializer['functions'], function_labels,
                         function_columns)

    def reset(self) -> None:
        """Forgets every time and count; the links' paths are kept."""
        self.store({m: records.CallRecord() for m in _MODES[None]},
                   forget_paths=False)
        self._stored = {m: records.CallRecord() for m in _MODES[None]}
        for mode in _MODES[None]:
            self.outside[mode].__init__()  # the same record, emptied


def _load_by_type(serializer, table, fields):
    # A snapshot of an earlier version has no table: no rows.
    try:
        return _state.load_rows(_state.child(serializer, table), fields)
    except _state.MissingState:
        return []


def _by_record(saved, rows, what):
    for (index, name), values in rows:
        if not 0 <= index < len(saved):
            raise ValueError(f'TimerHook.serialize: bad {what} row '
                             f'{[index, name]!r} in the saved state.')
        yield saved[index], name, values


def _add_functions(summary, rows, flops):
    fields = [f for f in records.FUNCTION_FIELDS
              if flops or f not in ('flops', 'backward_flops')]
    for row in rows:
        link = summary.setdefault(row.link, {})
        link.setdefault('functions', collections.OrderedDict())[
            row.function] = {f: getattr(row, f) for f in fields}
    for key, link in summary.items():
        if key != keys.OUTSIDE:
            link.setdefault('functions', collections.OrderedDict())
            link['rest_time'] = link['self_time'] - sum(
                one['time'] for one in link['functions'].values())


def _trees_from_rows(rows):
    # Inverse of the pre-order rows that serialize saves.
    roots = {mode: records.CallRecord() for mode in _MODES[None]}
    stack, current = [], None
    for (mode, depth, *labels), values in rows:
        if mode != current:
            stack, current = [], mode
        if mode not in roots or not 0 <= depth <= len(stack):
            raise ValueError(f'TimerHook.serialize: bad row '
                             f'{[mode, depth] + labels!r} in the saved state.')
        del stack[depth:]
        parent = stack[-1] if stack else roots[mode]
        labels = records.Labels(*labels)
        rec = parent.children[labels] = records.CallRecord(
            labels, labels=labels)
        for column, attribute in _SAVED.items():
            setattr(rec, attribute, _number(attribute, values[column]))
        stack.append(rec)
    return roots


def _number(attribute, value):
    # Saved as float64: counts back to integers.
    return value if attribute in ('elapsed', 'backward', 'forward') else int(
        value)

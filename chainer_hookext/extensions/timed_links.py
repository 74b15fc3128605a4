import sys
import warnings

import chainer
import numpy
from chainer import serializer as serializer_module
from chainer.training import extension

from chainer_hookext import _comm_figures
from chainer_hookext import _timing_table
from chainer_hookext import _units
from chainer_hookext.extensions import link_hook_extension
from chainer_hookext.link_hooks import _timer_state
from chainer_hookext.link_hooks import _timer_tree
from chainer_hookext.link_hooks import timer


# Fields of a summary entry kept in totals and baselines, in this order.
_FIELDS = ('elapsed_time', 'self_time', 'occurrence', 'backward_time',
           'backward_self_time')


class TimedLinks(link_hook_extension.LinkHookExtension):
    """Trainer extension reporting the time of each link of the model.

    It owns a :class:`~chainer_hookext.TimerHook` for the length of
    training (see :class:`~chainer_hookext.LinkHookExtension`) and, at each
    trigger, reports for every link in scope:

    * ``time/<name>``: seconds spent in the link's forward (inclusive) per
      training iteration, averaged over the iterations since the last
      report;
    * ``time/<name>/self``: the same for its self time (minus the time in
      its child links), so the self times of a model add up to
      ``time/main``;
    * with ``backward=True`` (the default), ``time/<name>/backward``: the
      seconds per training iteration of the backward steps of the function
      nodes created in the forward of the link and its descendants, and
      ``time/<name>/backward/self``: of the nodes created by the link
      itself (outside its child links' forward).  Steps of nodes created
      outside the timed links (e.g. a loss computed outside the model) are
      reported as ``time/(outside)/backward``, so the backward self times
      and it add up to the whole backward time timed.  A link named
      ``backward`` is refused then (its key would be its parent's).

    ``<name>`` is the link's name in the reporter's shape: ``main``,
    ``main/predictor``, ``main/predictor/l1`` for ``L.Classifier(MLP())``
    under the ``main`` optimizer, so ``LogReport``, ``PrintReport`` and
    ``PlotReport`` take the keys as they are.  The extension runs at
    ``PRIORITY_WRITER``: ``LogReport`` sees the values in the same iteration.

    Only training-mode calls are counted, so that
    :class:`~chainer.training.extensions.Evaluator` does not inflate the
    figures.  With ``validation=True`` evaluation-mode calls are timed too
    and reported as ``validation/time/<name>`` (and ``.../self``; there is
    no backward in evaluation): seconds
    per outermost call of the model in evaluation mode (one per validation
    batch with ``Evaluator``), averaged since the last report.  Put the
    ``Evaluator`` before this extension in ``trainer.extend`` order to have
    its run reported in the same iteration.

    The state (cumulative times and counts, and the baseline of the last
    report) is serialized with the trainer, so a run resumed from a snapshot
    reports the same keys at the same iterations, and :meth:`summary` covers
    the whole run.

    Args:
        links (~chainer.Link or list of ~chainer.Link): Sub-trees to time;
            ``None`` (default) times the ``main`` optimizer's target.
        validation (bool): Also time evaluation-mode calls and report them
            under ``validation/``.
        print_report (bool): Print the per-link tree table (times per
            iteration, with backward columns) at each trigger.
        unit (str): Unit of the printed table: ``'sec'``, ``'ms'``, ``'us'``,
            ``'ns'``, ``'auto'`` or ``'auto_foreach'``.
        comm (chainermn.CommunicatorBase): Under ChainerMN, the workers'
            communicator: at each trigger every worker's figures are
            gathered on rank 0, which reports per key the mean over workers
            (``time/<name>``) and ``time/<name>/max``, ``.../min`` and
            ``.../slowest_rank``, and prints them.  Every rank must have
            the extension with the same trigger (the README's ChainerMN
            section tells how to resume each rank's state).
        local_report (bool): With ``comm``, ranks other than 0 report (and
            print) their own figures too; by default they report nothing.
        backward (bool): Also time backward per link, with a function hook
            registered and unregistered with the link hook.  ``False``
            registers no function hook: function calls cost nothing more.

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

    def __init__(self, links=None, *, validation=False, print_report=False,
                 unit='auto', comm=None, local_report=False, backward=True):
        for arg, value in (('validation', validation),
                           ('print_report', print_report),
                           ('local_report', local_report),
                           ('backward', backward)):
            if not isinstance(value, bool):
                raise TypeError(
                    '`TimedLinks({}={!r})` needs True or False.'.format(
                        arg, value))
        _units.check_unit('TimedLinks', unit)
        if comm is not None:
            _comm_figures.check_comm('TimedLinks', comm)
        elif local_report:
            raise ValueError(
                '`TimedLinks(local_report=True)` needs `comm=`: without a '
                'communicator every report is local already.')
        super().__init__(
            timer.TimerHook(name='TimedLinks', backward=backward), links,
            train=True, eval=validation)
        self.validation = validation
        self.backward = backward
        self.print_report = print_report
        self.unit = unit
        self.comm = comm
        self.local_report = local_report
        self._names = []
        self._last_iteration = None
        self._baseline = {}
        self._base_calls = [0, 0]

    def initialize(self, trainer):
        names = self.scope_link_names(trainer)
        for name in names.values():
            if name.endswith('/self'):
                raise ValueError(
                    'TimedLinks: the link {!r} is named `self`, so its key '
                    '`time/{}` would collide with the self time of its '
                    'parent; rename the link or leave it out with '
                    '`links=`.'.format(name, name))
            if self.backward and name.endswith('/backward'):
                raise ValueError(
                    'TimedLinks: the link {!r} is named `backward`, so its '
                    'key `time/{}` would collide with the backward time of '
                    'its parent; rename the link, leave it out with '
                    '`links=`, or pass `backward=False`.'.format(name, name))
        super().initialize(trainer)
        optimizers = trainer.updater.get_all_optimizers()
        # Paths from each optimizer's target; the first name wins, as in
        # the reporter's names.
        for key in sorted(optimizers, reverse=True):
            self.hook.add_root(optimizers[key].target)
        self._names = list(names.values())
        if self._last_iteration is None:
            self._last_iteration = trainer.updater.iteration
            self._baseline, self._base_calls = self._totals()

    def __call__(self, trainer):
        iteration = trainer.updater.iteration
        totals, calls = self._totals()
        iterations = iteration - self._last_iteration
        evaluations = calls[0] - self._base_calls[0]
        tables = []
        if iterations > 0:
            tables.append(self._averages(
                totals, True, iterations, 'time/',
                'TimedLinks at iteration {}: seconds per training iteration, '
                'averaged over {} iterations'.format(iteration, iterations)))
        if self.validation and evaluations > 0:
            tables.append(self._averages(
                totals, False, evaluations, 'validation/time/',
                'TimedLinks at iteration {}: seconds per evaluation call of '
                'the model, averaged over {} calls'.format(
                    iteration, evaluations)))
        observation = {}
        for _, values, _, _ in tables:
            observation.update(values)
        # With a communicator every rank gathers; rank 0 reports the summary,
        # the other ranks their own figures only with local_report=True.
        local = self.comm is None
        if not local:
            gathered = _comm_figures.report_gathered(
                self.comm, observation, iteration,
                self.unit if self.print_report else None,
                backward=self.backward)
            local = self.local_report and not gathered
        if local:
            chainer.report(observation)
            if self.print_report:
                for title, _, table, backward in tables:
                    print(title, file=sys.stdout)
                    _timing_table.print_tree_table(
                        table, self.unit, sys.stdout, header='LinkName',
                        backward=backward)
        self._baseline, self._base_calls = totals, calls
        self._last_iteration = iteration

    def _totals(self):
        # ({(train, name): (elapsed, self, count, backward, backward self)},
        #  [eval calls, train calls]); '(outside)' is a name here.
        totals = {}
        calls = []
        for train, mode in ((False, 'eval'), (True, 'train')):
            for name, entry in self.hook.summary('name', mode).items():
                totals[train, name] = tuple(entry[field] for field in _FIELDS)
            calls.append(self.hook.total_calls(mode))
        return totals, calls

    def _averages(self, totals, train, n, prefix, title):
        # Figures per iteration (per call in evaluation) since the baseline.
        backward = train and self.backward
        values = {}
        table = {}
        zero = (0.0, 0.0, 0, 0.0, 0.0)
        for name in self._names + [_timer_tree.OUTSIDE] * backward:
            now = totals.get((train, name), zero)
            then = self._baseline.get((train, name), zero)
            entry = {field: max(a - b, 0) / n
                     for field, a, b in zip(_FIELDS, now, then)}
            entry['occurrence'] = now[2] - then[2]
            key = prefix + name
            if name == _timer_tree.OUTSIDE:
                values[key + '/backward'] = entry['backward_time']
                if entry['backward_time'] > 0:
                    table[name] = entry
                continue
            values[key] = entry['elapsed_time']
            values[key + '/self'] = entry['self_time']
            if backward:
                values[key + '/backward'] = entry['backward_time']
                values[key + '/backward/self'] = entry['backward_self_time']
            table[name] = entry
        return title, values, table, backward

    def summary(self, by='path', mode='train'):
        """Returns the cumulative summary of the run, resumed parts included.

        See :meth:`TimerHook.summary() <chainer_hookext.TimerHook.summary>`
        for ``by`` and ``mode``; ``mode='eval'`` gives the evaluation calls
        timed with ``validation=True``.
        """
        return self.hook.summary(by=by, mode=mode)

    def serialize(self, serializer):
        """Saves or restores the hook's state and the last report's baseline.
        """
        if not isinstance(serializer, serializer_module.Deserializer):
            self.hook.serialize(serializer['hook'])
            keys = sorted(self._baseline)
            serializer('last_iteration', -1 if self._last_iteration is None
                       else self._last_iteration)
            serializer('baseline_labels', _timer_state.encode_json(
                [[train, name] for train, name in keys]))
            serializer('baseline', numpy.asarray(
                [self._baseline[key] for key in keys],
                numpy.float64).reshape(-1, len(_FIELDS)))
            serializer('baseline_calls', numpy.asarray(
                self._base_calls, numpy.int64))
            return
        try:
            self.hook.serialize(serializer['hook'])
            last = int(serializer('last_iteration', None))
            labels = _timer_state.decode_json(
                serializer('baseline_labels', None))
            values = numpy.asarray(serializer('baseline', None))
            calls = serializer('baseline_calls', None)
        except KeyError as e:
            warnings.warn(
                '{}: the snapshot has no state for it ({}); it was probably '
                'taken before this extension was added.  Timing starts '
                'afresh.'.format(self.name or self.default_name, e),
                RuntimeWarning)
            return
        self._last_iteration = None if last < 0 else last
        # Rows of 3 come from states saved before backward timing.
        values = values.reshape(len(labels), values.size // max(
            len(labels), 1))
        self._baseline = {
            (bool(train), name): (float(row[0]), float(row[1]), int(row[2]),
                                  float(_get(row, 3)), float(_get(row, 4)))
            for (train, name), row in zip(labels, values)}
        self._base_calls = [int(c) for c in calls]


def _get(row, i):
    return row[i] if i < len(row) else 0.0

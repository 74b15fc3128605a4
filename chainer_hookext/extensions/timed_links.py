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
from chainer_hookext.link_hooks import _timer_tree
from chainer_hookext.link_hooks import timer


class TimedLinks(link_hook_extension.LinkHookExtension):
    """Trainer extension reporting the forward time of each link of the model.

    It owns a :class:`~chainer_hookext.TimerHook` for the length of
    training (see :class:`~chainer_hookext.LinkHookExtension`) and, at each
    trigger, reports for every link in scope:

    * ``time/<name>``: seconds spent in the link's forward (inclusive) per
      training iteration, averaged over the iterations since the last
      report;
    * ``time/<name>/self``: the same for its self time (minus the time in
      its child links), so the self times of a model add up to
      ``time/main``.

    ``<name>`` is the link's name in the reporter's shape: ``main``,
    ``main/predictor``, ``main/predictor/l1`` for ``L.Classifier(MLP())``
    under the ``main`` optimizer, so ``LogReport``, ``PrintReport`` and
    ``PlotReport`` take the keys as they are.  The extension runs at
    ``PRIORITY_WRITER``: ``LogReport`` sees the values in the same iteration.

    Only training-mode calls are counted, so that
    :class:`~chainer.training.extensions.Evaluator` does not inflate the
    figures.  With ``validation=True`` evaluation-mode calls are timed too
    and reported as ``validation/time/<name>`` (and ``.../self``): seconds
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
            iteration) at each trigger.
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

    .. admonition:: Example

        >>> from chainer_hookext import TimedLinks
        >>> trainer.extend(TimedLinks(), trigger=(1, 'epoch'))
        >>> trainer.extend(extensions.LogReport())
        >>> trainer.extend(extensions.PrintReport(
        ...     ['epoch', 'main/loss', 'time/main',
        ...      'time/main/predictor/l1']))
    """

    trigger = 1, 'epoch'
    priority = extension.PRIORITY_WRITER
    default_name = 'TimedLinks'

    def __init__(self, links=None, *, validation=False, print_report=False,
                 unit='auto', comm=None, local_report=False):
        for arg, value in (('validation', validation),
                           ('print_report', print_report),
                           ('local_report', local_report)):
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
        super().__init__(timer.TimerHook(name='TimedLinks'), links,
                         train=True, eval=validation)
        self.validation = validation
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
        for _, values, _ in tables:
            observation.update(values)
        # With a communicator every rank gathers; rank 0 reports the summary,
        # the other ranks their own figures only with local_report=True.
        local = self.comm is None
        if not local:
            gathered = _comm_figures.report_gathered(
                self.comm, observation, iteration,
                self.unit if self.print_report else None)
            local = self.local_report and not gathered
        if local:
            chainer.report(observation)
            if self.print_report:
                for title, _, table in tables:
                    print(title, file=sys.stdout)
                    _timing_table.print_tree_table(
                        table, self.unit, sys.stdout, header='LinkName')
        self._baseline, self._base_calls = totals, calls
        self._last_iteration = iteration

    def _totals(self):
        # ({(train, name): (elapsed, self, count)}, [eval calls, train calls])
        totals = {}
        calls = []
        for train, mode in ((False, 'eval'), (True, 'train')):
            for name, entry in self.hook.summary('name', mode).items():
                totals[train, name] = (entry['elapsed_time'],
                                       entry['self_time'], entry['occurrence'])
            calls.append(self.hook.total_calls(mode))
        return totals, calls

    def _averages(self, totals, train, n, prefix, title):
        values = {}
        table = {}
        zero = 0.0, 0.0, 0
        for name in self._names:
            now = totals.get((train, name), zero)
            then = self._baseline.get((train, name), zero)
            elapsed = (now[0] - then[0]) / n
            self_time = max(now[1] - then[1], 0.0) / n
            values[prefix + name] = elapsed
            values[prefix + name + '/self'] = self_time
            table[name] = {'elapsed_time': elapsed, 'self_time': self_time,
                           'occurrence': now[2] - then[2]}
        return title, values, table

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
            serializer('baseline_labels', _timer_tree.encode_json(
                [[train, name] for train, name in keys]))
            serializer('baseline', numpy.asarray(
                [self._baseline[key] for key in keys],
                numpy.float64).reshape(-1, 3))
            serializer('baseline_calls', numpy.asarray(
                self._base_calls, numpy.int64))
            return
        try:
            self.hook.serialize(serializer['hook'])
            last = int(serializer('last_iteration', None))
            labels = _timer_tree.decode_json(
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
        self._baseline = {
            (bool(train), name): (float(e), float(s), int(c))
            for (train, name), (e, s, c) in zip(labels, values)}
        self._base_calls = [int(c) for c in calls]

import sys

import chainer

from chainer_hookext import _timing_table
from chainer_hookext import _units
from chainer_hookext.link_hooks import _timer_stack
from chainer_hookext.link_hooks import _timer_state
from chainer_hookext.link_hooks import _timer_tree


class TimerHook(_timer_stack.TimerStack):
    """Link hook timing :meth:`Link.forward() <chainer.Link.forward>` per link.

    A drop-in for :class:`chainer.link_hooks.TimerHook`: ``name``,
    :meth:`total_time`, :meth:`summary` (keyed by class name, with
    ``elapsed_time`` and ``occurrence``) and :meth:`print_report` behave the
    same, and more:

    * ``summary(by='path')`` keys times by each link's path as
      :meth:`Link.namedlinks() <chainer.Link.namedlinks>` spells it
      (``'/'``, ``'/predictor'``, ``'/predictor/l1'``) and adds
      ``self_time``: time in the link minus time in its child links, so that
      self times add up to :meth:`total_time`.  ``print_report(by='path')``
      prints it as an indented tree.
    * Memory is bounded by the number of call paths (one record per link
      and caller), never by the number of calls: nothing is appended per
      call.
    * Links on a GPU are timed with CUDA events resolved when a summary is
      asked for; no device synchronisation per link call.
    * Exception safe: Chainer calls no ``forward_postprocess`` for a
      forward that raises.  The hook ends such calls at the next call made
      from outside them (it checks the ``Link.__call__`` frames still
      running), or at the next report, and counts each with the time up to
      its last timed event; later calls are timed as if nothing happened.
    * Training and evaluation calls are kept apart (``mode=`` of
      :meth:`summary`), and :meth:`set_scope` restricts timing to some links
      and modes, as :class:`~chainer_hookext.TimedLinks` does.
    * :meth:`serialize` saves and restores all accumulated state.
    * With ``backward=True``, backward time per link: a function hook,
      registered and unregistered with this hook, tags each function node
      created in a timed link's forward with the innermost timed call, and
      charges the node's backward step to it.  ``summary(by='path')`` then
      has ``backward_self_time`` (the link's own nodes) and
      ``backward_time`` (its sub-tree's), the tree table has their columns,
      and backward steps of nodes created outside every timed link (e.g. a
      loss computed outside the model) are summarized under the key
      ``'(outside)'`` rather than lost.  The self times add up to
      :meth:`total_backward_time`.

    Paths come from ``namedlinks()`` of the outermost link timed (the root of
    each call), or of the links given to :meth:`add_root`.  A link called
    inside another but not its descendant gets a path under its caller,
    e.g. ``'/predictor/<Linear>'``.  Between registrations the hook keeps no
    reference to any link.

    .. note::

       The training mode is read once per outermost timed call, so a
       ``using_config('train', ...)`` inside a model's forward does not
       split its calls.  After a forward raised, a call of one of the
       raising link's own children made before any other call (e.g.
       ``model.predictor.l1(x)`` right after ``predictor`` itself raised)
       is still taken as part of the failed call.

    Args:
        name (str): Name of the hook; ``'TimerHook'`` by default.
        backward (bool): Also time backward per link.  Off by default, so
            that the hook costs what Chainer's does, and nothing in function
            calls; :class:`~chainer_hookext.TimedLinks` turns it on.

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
    table = dict(_units.FACTORS)

    def __init__(self, *, name=None, backward=False):
        if name is not None:
            if not isinstance(name, str) or not name:
                raise TypeError(
                    '`TimerHook(name={!r})` needs a non-empty string, e.g. '
                    "'TimerHook'.".format(name))
            self.name = name
        if not isinstance(backward, bool):
            raise TypeError(
                '`TimerHook(backward={!r})` needs True or False.'.format(
                    backward))
        self.backward = backward
        super().__init__(self.name + '_backward')

    def added(self, link):
        """Registers the backward timer (``backward=True``) in the thread."""
        if self.backward:
            self._add_backward()

    def deleted(self, link):
        """Keeps the state, and lets go of every link it referred to.

        The backward timer is unregistered with the hook.
        """
        self._remove_backward()
        self._retire()

    def set_scope(self, link_names=None, train=True, eval=True):
        """Sets the links and modes to time, as in :class:`ScopedLinkHook`.

        The state timed so far is kept; later calls are named by the new
        scope.
        """
        self._retire(keep_paths=True)
        super().set_scope(link_names, train=train, eval=eval)

    def add_root(self, link):
        """Takes the paths of ``link`` and its descendants from ``link``.

        By default a path is taken from the outermost link of the first call
        that reaches the link; call this before timing to measure paths from
        a given root instead (:class:`~chainer_hookext.TimedLinks` passes
        the optimizers' targets).  The hook refers to ``link`` until it is
        next unregistered.

        Args:
            link (~chainer.Link): Root of the paths, spelled ``'/'``.
        """
        if not isinstance(link, chainer.Link):
            raise TypeError(
                '`TimerHook.add_root(link={!r})` needs a chainer.Link, e.g. '
                'the model.'.format(link))
        self._index(link, '', override=True)

    def flush(self):
        """Ends the calls left open by exceptions and resolves CUDA events.

        :meth:`summary` and the other reports call it.
        """
        self._merged(())

    def total_time(self, mode=None):
        """Returns the seconds spent in outermost timed calls.

        Args:
            mode (str): ``'train'``, ``'eval'`` or ``None`` (both).
        """
        root = self._merged(_trains('TimerHook.total_time', mode))
        return sum(node.elapsed for node in root.children.values())

    def total_backward_time(self, mode=None):
        """Returns the seconds of the backward steps timed.

        The sum of every backward self time, ``'(outside)'`` included; 0
        without ``backward=True``.

        Args:
            mode (str): ``'train'``, ``'eval'`` or ``None`` (both).
        """
        trains = _trains('TimerHook.total_backward_time', mode)
        root = self._merged(trains)
        return sum(node.backward for _, node, _ in _timer_tree.walk(root)) + (
            sum(self._outside[train].backward for train in trains))

    def total_calls(self, mode=None):
        """Returns the number of outermost timed calls (see total_time)."""
        root = self._merged(_trains('TimerHook.total_calls', mode))
        return sum(node.count for node in root.children.values())

    def summary(self, by='class', mode=None):
        """Returns a summary of the times of links.

        Args:
            by (str): ``'class'`` (keys are class names, as Chainer's
                ``TimerHook``), ``'path'`` (link paths, parents first) or
                ``'name'`` (the names given by :meth:`set_scope`, e.g.
                ``'main/predictor/l1'``; paths when there is no scope).
            mode (str): ``'train'``, ``'eval'`` or ``None`` (both).

        Returns:
            collections.OrderedDict: ``{key: {'elapsed_time': seconds,
            'self_time': seconds, 'occurrence': calls}}``; empty when
            nothing was timed.  Classes come in the order Chainer's hook
            gives (first return), paths and names in order of first call.
            Paths and names also have ``'backward_time'`` and
            ``'backward_self_time'`` (0 without ``backward=True``), and
            the last key is ``'(outside)'`` when backward steps of nodes
            created outside the timed links were timed.
        """
        if by not in _timer_tree.KEYS:
            raise ValueError(
                "`TimerHook.summary(by={!r})` is not supported: use 'class', "
                "'path' or 'name'.".format(by))
        trains = _trains('TimerHook.summary', mode)
        summary = _timer_tree.summarize(self._merged(trains), by)
        outside = sum(self._outside[train].backward for train in trains)
        if by != 'class' and outside > 0:
            summary[_timer_tree.OUTSIDE] = {
                'elapsed_time': 0.0, 'self_time': 0.0, 'occurrence': 0,
                'backward_time': outside, 'backward_self_time': outside}
        return summary

    def print_report(self, unit='auto', file=None, *, by='class', mode=None):
        """Prints the summary as a table (see :meth:`summary`).

        Args:
            unit (str): ``'sec'``, ``'ms'``, ``'us'``, ``'ns'``, ``'auto'``
                (one unit, chosen from the largest time) or
                ``'auto_foreach'`` (a unit for each time).
            file: Stream to write to; ``sys.stdout`` by default.
            by (str): ``'class'`` prints Chainer's table; ``'path'`` and
                ``'name'`` print an indented tree with self times, and
                backward times with ``backward=True``.
            mode (str): ``'train'``, ``'eval'`` or ``None`` (both).
        """
        _units.check_unit('TimerHook.print_report', unit)
        summary = self.summary(by=by, mode=mode)
        file = sys.stdout if file is None else file
        if by == 'class':
            _timing_table.print_class_table(summary, unit, file)
        else:
            header = 'LinkPath' if by == 'path' else 'LinkName'
            _timing_table.print_tree_table(
                summary, unit, file, header, backward=self.backward)

    def serialize(self, serializer):
        """Saves or restores all accumulated times and counts.

        Loading replaces the hook's state.
        """
        if not _timer_state.is_loading(serializer):
            roots = [self._merged((train,)) for train in (False, True)]
            _timer_state.save(serializer, roots, self._outside)
            return
        state = _timer_state.load(serializer)
        if state is None:  # a non-strict deserializer without our state
            return
        self._retire(keep_state=False, keep_paths=True)
        self._base, outside = state
        for rec, seconds in zip(self._outside, outside):
            rec.backward = seconds


def _trains(call, mode):
    if mode is None:
        return False, True
    if mode in ('train', 'eval'):
        return (mode == 'train',)
    raise ValueError(
        "`{}(mode={!r})` is not a mode: use 'train', 'eval' or None "
        '(both).'.format(call, mode))

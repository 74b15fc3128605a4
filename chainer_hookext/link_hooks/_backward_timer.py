"""Backward time per link, for :class:`~chainer_hookext.TimerHook`.

A link hook sees only ``Link.forward``.  To time backward per link, a
:class:`BackwardTimer` (a :class:`chainer.FunctionHook` that a
``TimerHook(backward=True)`` registers and unregisters with itself) joins
the two:

* ``forward_preprocess`` tags each :class:`~chainer.FunctionNode` with the
  timer's running record (``timer._top``, the innermost timed call), or
  with ``None`` when no timed link runs.
* ``backward_preprocess`` / ``backward_postprocess`` time each backward step
  and charge it to ``record.sink.backward``: the backward self time of the
  link whose forward created the node.  Steps of nodes tagged ``None`` (or
  not at all) go to the timer's bucket of nodes created outside the timed
  links, one per mode, when that mode is in the timer's scope (the mode is
  read for these steps only).

The tag is an attribute of the node: it lives and dies with the node.  It
refers to a record, which the timer owns and keeps one of per call path, so
nothing is kept per call.  A retired record (the hook was unregistered) lets
go of its link and forwards later charges to the record it was merged into
(:func:`~._timer_tree.merge`).

Cost.  Two ``time.perf_counter()`` reads per step are unavoidable; the tag
is made almost free by CPython's compact attribute layout, shared by the
instances of a class, which takes only a few new names once the class has
many instances (any further name makes each tagged node build a dict: about
twice the hook's whole cost).  So registered timers share a small set of
names, ``_chainer_hookext_record_0`` first: :func:`register` makes a
hook for one registration, with the lowest free name, freed when it is
unregistered, so two names are in use only while two timers are
registered at once.  The methods that touch the tag are compiled for
their name: a plain attribute access costs a third of ``getattr`` /
``setattr`` with a name held in a variable.  (A graph built under one
registration and backpropagated under another that took the same name is
charged to the records of the former: the latter misses those steps.)

On a GPU (the timer's ``_use_gpu``) steps are timed with CUDA events,
resolved when the timer resolves its own.

.. note::

   A backward step that runs a backward of its own (``F.forget``
   recomputes its function in backward) is charged its time after the
   inner steps end, and the inner steps go to the outside bucket (their
   nodes are created in backward, when no link runs): nothing is counted
   twice.
"""

import time

from chainer_hookext import _modes
from chainer_hookext import _node_links
from chainer_hookext.link_hooks import _cuda_timing


# Bound once: the hot path pays no module attribute lookup.
_perf_counter = time.perf_counter
# CUDA event pairs kept before the oldest half is resolved.
_MAX_PENDING = 1 << 14
# Tag slots held by registered timers, and the class compiled for each.
_slots_in_use = set()
_classes = {}
# The methods that touch the tag, compiled for each slot's tag name.
_TAG_METHODS = '''
def forward_preprocess(self, function, in_data):
    rec = self.timer._top
    function.{tag} = None if rec is self._idle else rec


def backward_postprocess(self, function, in_data, out_grad):
    t = _perf_counter()
    try:
        rec = function.{tag}
    except AttributeError:  # created before the hook was registered
        rec = None
    if rec is None:
        rec = self._outside()
        if rec is None:
            return
    rec.sink.backward += t - self._mark
    self._mark = t


def tag_of(self, function):
    return getattr(function, {tag!r}, None)
'''


def register(timer, name):
    """Registers a new :class:`BackwardTimer` for ``timer`` in the thread.

    Its tag name is the lowest that no registered one has; it is freed by
    the hook's last :meth:`~BackwardTimer.unregister`, after which the hook
    is spent (the timer makes a new one for its next registration).

    Args:
        timer (~chainer_hookext.link_hooks._timer_stack.TimerStack): The
            timer whose running record tags the nodes; its ``_outside``
            records take the steps of untagged nodes.
        name (str): Base of the key under which the hook is registered.

    Returns:
        BackwardTimer: The registered hook.
    """
    slot = 0
    while slot in _slots_in_use:
        slot += 1
    cls = _classes.get(slot)
    if cls is None:  # the methods that touch the tag, for its name
        namespace = {}
        exec(_TAG_METHODS.format(tag='_chainer_hookext_record_{}'.format(
            slot)), globals(), namespace)
        cls = _classes[slot] = type(
            'BackwardTimer{}'.format(slot), (BackwardTimer,), namespace)
    hook = cls(timer, name)
    _slots_in_use.add(slot)
    hook._slot = slot
    hook.register()
    return hook


class BackwardTimer(_node_links.NodeTagger):
    """Function hook charging backward steps to a timer's records.

    Reuses :class:`~chainer_hookext._node_links.NodeTagger`'s counted
    :meth:`register` / :meth:`unregister`; its tags are records, not link
    names.  Made by :func:`register`, as a subclass with the methods that
    touch its tag: ``forward_preprocess``, ``backward_postprocess`` and
    ``tag_of``.
    """

    def __init__(self, timer, name):
        super().__init__(None, name=name)
        self._slot = None
        self.timer = timer
        self._idle = timer._idle
        self._mark = 0.0  # start of the running step: a time or an event
        self.pending = []  # (record, start event, stop event)

    @property
    def registered(self):
        """Whether the hook is in the thread's function hooks."""
        return self._registered is not None

    def register(self):
        """Registers the hook once more (counted); refused once spent."""
        if self._slot is None:
            raise RuntimeError(
                'BackwardTimer.register: this hook was unregistered and its '
                'tag name freed; make a new one with register(timer, name).')
        super().register()

    def unregister(self):
        """Unregisters the hook; the last call frees its tag name."""
        super().unregister()
        if self._registered is None and self._slot is not None:
            _slots_in_use.discard(self._slot)
            self._slot = None

    def backward_preprocess(self, function, in_data, out_grad):
        self._mark = _perf_counter()

    def _gpu_backward_preprocess(self, function, in_data, out_grad):
        self._mark = _cuda_timing.record_event()

    def _gpu_backward_postprocess(self, function, in_data, out_grad):
        rec = self.tag_of(function)
        if rec is None:
            rec = self._outside()
            if rec is None:
                return
        stop = _cuda_timing.record_event()
        self.pending.append((rec, self._mark, stop))
        self._mark = stop
        if len(self.pending) >= _MAX_PENDING:
            self.resolve(_MAX_PENDING // 2)

    def _outside(self):
        # The bucket of the current mode, or None when out of scope.
        train = True if _modes.is_train() else False
        mode = self.timer.mode
        if mode is not None and mode != train:
            return None
        return self.timer._outside[train]

    def use_gpu(self, gpu):
        """Times steps with CUDA events (``True``) or the CPU clock."""
        self.resolve()
        self._mark = 0.0
        if gpu:
            self.backward_preprocess = self._gpu_backward_preprocess
            self.backward_postprocess = self._gpu_backward_postprocess
        else:
            try:  # back to the class's methods
                del self.backward_preprocess
                del self.backward_postprocess
            except AttributeError:  # never switched
                pass

    def resolve(self, n=None):
        """Charges the first ``n`` (all) pending event pairs' times."""
        pending = self.pending
        n = len(pending) if n is None else n
        for rec, start, stop in pending[:n]:
            if isinstance(start, float):  # timing switched mid-step
                continue
            rec.sink.backward += max(_cuda_timing.elapsed(start, stop), 0.0)
        del pending[:n]

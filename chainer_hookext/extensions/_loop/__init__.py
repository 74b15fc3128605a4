"""The internals of :class:`~chainer_hookext.TimedLoop` and
:class:`~chainer_hookext.Timeline`.

* :mod:`.phases`: the clock that charges each moment of an iteration to
  one phase (``data``, ``forward`` ...);
* :mod:`.marks`: where each phase starts, seen through Chainer's hook
  points (a function hook, optimizer hooks, the trainer's extension
  entries);
* :mod:`.loop_extension`: one clock and one set of marks per trainer's
  loop, shared by the extensions that read it, and their base class.
"""

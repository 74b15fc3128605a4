"""The internals of :class:`~chainer_hookext.TimedLoop`.

* :mod:`.phases`: the clock that charges each moment of an iteration to
  one phase (``data``, ``forward`` ...), the innermost running one;
* :mod:`.wrappers`: where each phase starts and ends: thin wrappers put on
  the trainer's objects for the length of the run, and taken off again.
"""

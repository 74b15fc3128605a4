"""The internals of :class:`~chainer_hookext.Timeline`.

* :mod:`.link_spans`: the link hook and function hook that record each
  link call's forward and each backward step during a window;
* :mod:`.trace`: the Trace Event Format file made of a window's spans,
  written whole or not at all.
"""

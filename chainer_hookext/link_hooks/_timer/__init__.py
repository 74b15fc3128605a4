"""The internals of :class:`~chainer_hookext.TimerHook`, one concept each.

* :mod:`.call_stack`: where a link call's time is measured (the hook's
  ``forward_preprocess`` / ``forward_postprocess``);
* :mod:`.backward`: backward steps charged to the link that created them;
* :mod:`.call_tree`: records of the call paths, their merge, and the
  :class:`~.call_tree.Entry` rows every output is made from;
* :mod:`.link_paths`: the path of each link;
* :mod:`.frames`: which calls still run, when an exception skipped a
  postprocess;
* :mod:`.keys`: the layout of the reported keys (add a figure there);
* :mod:`.table`, :mod:`.units`: text tables;
* :mod:`.cuda_events`: GPU timing.

Saving through Chainer serializers is :mod:`chainer_hookext._state`, which
:class:`~chainer_hookext.TimedLoop` shares.
"""

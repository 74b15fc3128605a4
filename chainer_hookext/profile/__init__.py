"""A run's profile: what the extensions measured, its findings, its page.

:mod:`.run` reads a run (the log, ``profile.json``, the traces) from a
trainer or from its result folder; :mod:`.findings` says what matters most
in it; :mod:`.page` makes the self-contained ``profile.html``;
:mod:`.compare` tells what changed between two runs; :mod:`.command` is
``python -m chainer_hookext``.
"""

"""Extension priorities beyond Chainer's ``PRIORITY_*`` constants.
"""

#: Priority of an extension that must run after every other extension of the
#: iteration, e.g. one that releases what the others read
#: (:class:`~chainer_hookext.UnchainVariables`).
#:
#: It is a million below zero: far below the lowest priority Chainer's
#: built-in extensions use (``snapshot``'s -100) and below any priority
#: picked by hand in practice (-500, -1000 ...).  An extension that must run
#: later still can use ``PRIORITY_LAST - 1``.
PRIORITY_LAST = -1000000

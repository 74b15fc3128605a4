"""Extension priorities beyond Chainer's ``PRIORITY_*`` constants."""

#: Priority of an extension that runs after every other of the iteration
#: (:class:`~chainer_hookext.UnchainVariables`): far below Chainer's lowest
#: (``snapshot``'s -100) and any picked by hand; later still:
#: ``PRIORITY_LAST - 1``.
PRIORITY_LAST = -1000000

"""Names of the links of a trainer's models, in Chainer's reporter shape.

Chainer's :class:`~chainer.training.Trainer` registers every link of every
optimizer's target as a reporter observer named ``<optimizer name><path>``,
where ``<path>`` is the link's path as :meth:`chainer.Link.namedlinks` spells
it and the root path ``'/'`` is dropped: ``main``, ``main/predictor``,
``main/predictor/l1``.  The extensions of this package key their reports and
hook scopes by the same names, so ``LogReport`` and ``PrintReport`` need
no glue.
"""


def link_name(prefix, path):
    """Returns the reporter-style name of the link at ``path``.

    >>> link_name('main', '/')
    'main'
    >>> link_name('main', '/predictor/l1')
    'main/predictor/l1'
    """
    return prefix if path == '/' else prefix + path


def model_link_names(trainer):
    """Maps ``id(link)`` to its name for every link of the trainer's models.

    Names are the ones ``Trainer`` gives the reporter's observers: for each
    optimizer in the updater's order, each link of its target in
    :meth:`~chainer.Link.namedlinks` order, and a link reachable under two
    names keeps the last, as in the reporter.

    Args:
        trainer (~chainer.training.Trainer): Trainer whose updater's
            optimizers own the models.

    Returns:
        dict: ``{id(link): (name, link)}``.
    """
    names = {}
    for prefix, optimizer in trainer.updater.get_all_optimizers().items():
        for path, link in optimizer.target.namedlinks():
            names[id(link)] = (link_name(prefix, path), link)
    return names

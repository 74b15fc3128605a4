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

    Args:
        trainer (~chainer.training.Trainer): Trainer whose updater's
            optimizers own the models.

    Returns:
        dict: ``{id(link): (name, link)}`` for each link of each optimizer's
        target, in optimizer-name order then :meth:`~chainer.Link.namedlinks`
        order.  A link shared by two models keeps its first name.
    """
    names = {}
    optimizers = trainer.updater.get_all_optimizers()
    for prefix in sorted(optimizers):
        target = optimizers[prefix].target
        for path, link in target.namedlinks():
            names.setdefault(id(link), (link_name(prefix, path), link))
    return names

"""Names of the links of a trainer's models, in Chainer's reporter shape.

Chainer's :class:`~chainer.training.Trainer` registers every link of every
optimizer's target as a reporter observer named ``<optimizer name><path>``,
where ``<path>`` is the link's path as :meth:`chainer.Link.namedlinks` spells
it and the root path ``'/'`` is dropped: ``main``, ``main/predictor``,
``main/predictor/l1``.  The extensions of this package key their reports and
hook scopes by the same names, so ``LogReport`` and ``PrintReport`` need
no glue.
"""

import warnings

import chainer


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


def insert_added(names, name, parent):
    """Inserts ``name``, a link added under ``parent``, in a list of names
    in tree order: after ``parent`` and the names under it.

    >>> names = ['main', 'main/predictor', 'main/predictor/l1', 'main/x']
    >>> insert_added(names, 'main/predictor/l3', 'main/predictor')
    >>> names
    ['main', 'main/predictor', 'main/predictor/l1', 'main/predictor/l3', \
'main/x']
    """
    at = names.index(parent) + 1 if parent in names else len(names)
    while at < len(names) and names[at].startswith(parent + '/'):
        at += 1
    names.insert(at, name)


def warn_unhooked(call, named_links):
    """Warns about links whose calls Chainer runs no link hooks for.

    ``Link.__call__`` runs the link hooks around ``forward``; a link class
    that overrides ``__call__`` itself (Chainer 1 style) bypasses it, so
    every hook, ours included, sees nothing of the link.

    Args:
        call (str): The class to name in the warning.
        named_links (iterable): ``(name, link)`` pairs in scope.
    """
    names = [name for name, link in named_links
             if type(link).__call__ is not chainer.Link.__call__]
    if names:
        warnings.warn(
            '{}: {} define __call__ instead of forward, so Chainer runs no '
            'link hook for their calls and they report nothing of their '
            'own (their child links are still seen); rename their __call__ '
            'to forward.'.format(call, ', '.join(map(repr, names))),
            RuntimeWarning)

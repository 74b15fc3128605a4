"""Names of the links of a trainer's models as Chainer's reporter spells
them (``main``, ``main/predictor/l1``): the names of every key and scope.
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
    """Maps ``id(link)`` to its name for every link of the trainer's models,
    as ``Trainer`` names the reporter's observers (a link reachable under two
    names keeps the last).

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
    """Warns about links that override ``__call__`` (Chainer 1 style):
    ``Link.__call__`` runs the link hooks, so no hook sees them.

    Args:
        call (str): The class to name in the warning.
        named_links (iterable): ``(name, link)`` pairs in scope.
    """
    names = [name for name, link in named_links
             if type(link).__call__ is not chainer.Link.__call__]
    if names:
        warnings.warn(
            f"{call}: {', '.join(map(repr, names))} define __call__ instead "
            'of forward, so Chainer runs no link hook for their calls and '
            'they report nothing of their own (their child links are still '
            'seen); rename their __call__ to forward.', RuntimeWarning)

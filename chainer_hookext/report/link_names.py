"""Names of a trainer's links as Chainer's reporter spells them
(``main/predictor/l1``)."""

import warnings

import chainer


def link_name(prefix, path):
    """The reporter-style name of the link at ``path``.

    >>> link_name('main', '/')
    'main'
    >>> link_name('main', '/predictor/l1')
    'main/predictor/l1'
    """
    return prefix if path == '/' else prefix + path


def model_link_names(trainer):
    """``{id(link): (name, link)}`` of the trainer's models' links, named as
    ``Trainer`` names the observers (the last of two names)."""
    optimizers = trainer.updater.get_all_optimizers()
    return {id(link): (link_name(prefix, path), link)
            for prefix, optimizer in optimizers.items()
            for path, link in optimizer.target.namedlinks()}


def insert_added(names, name, parent):
    """Inserts ``name``, added under ``parent``, in tree-ordered ``names``.

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
    """Warns about links overriding ``__call__``, which runs the hooks."""
    names = [name for name, link in named_links
             if type(link).__call__ is not chainer.Link.__call__]
    if names:
        warnings.warn(
            f"{call}: {', '.join(map(repr, names))} define __call__ instead "
            'of forward, so Chainer runs no link hook for their calls and '
            'they report nothing of their own (their child links are still '
            'seen); rename their __call__ to forward.', RuntimeWarning)

"""Every reach into Chainer's private parts, each with its reason.

Chainer 7.8.1 is the last release: these names will not move.  Everything
else the package uses of Chainer is public.
"""

import chainer
from chainer import _backprop_utils
from chainer import configuration


# chainer.config.train goes through LocalConfig.__getattr__ and costs about
# 400 ns, as much as a whole empty link hook: the flags are read from the
# thread-local dictionary chainer.using_config writes, falling back to the
# global configuration, at a fraction of the cost.
_local = configuration.config._local
_global = configuration.global_config

#: The code of ``Link.__call__``: Chainer calls no ``forward_postprocess``
#: for a forward that raises (no ``try`` there), so the slow paths tell the
#: calls still running by their frames (:mod:`._frames`).
LINK_CALL_CODE = chainer.Link.__call__.__code__
#: The code of one function node's backward step (its local ``func`` is the
#: node): likewise no ``backward_postprocess`` for a step that raises.
BACKWARD_STEP_CODE = _backprop_utils.backprop_step.__code__


def is_train():
    """Returns ``chainer.config.train`` for the calling thread."""
    value = _local.__dict__.get('train', _local)
    if value is _local:
        return _global.train
    return value


def is_recomputing():
    """Returns ``chainer.config.in_recomputing`` (``F.forget``'s backward).
    """
    return _read('in_recomputing')


def step_flags():
    """Returns ``(in_recomputing, enable_backprop)`` of the calling thread.

    What a function hook reads of each node applied in a backward step,
    in one call: it runs for every gradient node.
    """
    local = _local.__dict__
    recomputing = local.get('in_recomputing', _local)
    backprop = local.get('enable_backprop', _local)
    return (_global.in_recomputing if recomputing is _local else recomputing,
            _global.enable_backprop if backprop is _local else backprop)


def keeps_graph_on_report():
    """Returns ``chainer.config.keep_graph_on_report`` for the thread."""
    return _read('keep_graph_on_report')


def _read(name):
    # The thread's value of a config entry, else the global one (is_train
    # spells it out: it is read on the hot path).
    value = _local.__dict__.get(name, _local)
    return getattr(_global, name) if value is _local else value


def link_hooks():
    """Returns the calling thread's global link hooks, by name.

    Chainer keeps them in ``chainer._get_link_hooks()`` (an ``OrderedDict``
    per thread), which ``with hook:`` fills; it has no public accessor.
    """
    return chainer._get_link_hooks()


def extension_entries(trainer):
    """Returns the trainer's extension entries by name.

    ``Trainer`` keeps them in ``_extensions`` and gives no public list
    (``get_extension`` takes one name).
    """
    return trainer._extensions


def optimizer_hooks(optimizer, timing):
    """Returns the optimizer's ``'pre'`` or ``'post'`` hooks by name.

    Chainer keeps them, in call order, in ``optimizer._hookable``
    (``chainer/optimizer.py``, ``_OptimizerHookable``), with no public
    accessor.
    """
    hookable = optimizer._hookable
    return hookable._pre_update_hooks if timing == 'pre' else (
        hookable._post_update_hooks)

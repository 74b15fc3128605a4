"""Every reach into Chainer 7.8.1's private parts, each with its reason.

Everything else the package uses of Chainer is public; node tagging stores
an attribute of its own on each node and reads none of Chainer's.
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


#: The attribute holding the file name, in the trainer's ``out``, that
#: Chainer 7.8.1's writing extensions keep private: ``LogReport._log_name``,
#: ``PlotReport._file_name``, ``VariableStatisticsPlot._filename``,
#: ``DumpGraph._filename`` (each only an argument of ``__init__``).
_FILE_ATTRIBUTES = ('_log_name', '_file_name', '_filename')


def written_file(extension):
    """Returns the file name a Chainer extension writes in the trainer's
    ``out`` (``None`` when it keeps none of :data:`_FILE_ATTRIBUTES`).

    ProfileReport refuses to write its page over it.
    """
    for attribute in _FILE_ATTRIBUTES:
        name = getattr(extension, attribute, None)
        if isinstance(name, str):
            return name
    return None


def optimizer_hooks(optimizer, timing):
    """Returns the optimizer's ``'pre'`` or ``'post'`` hooks by name.

    Chainer keeps them, in call order, in ``optimizer._hookable``
    (``chainer/optimizer.py``, ``_OptimizerHookable``), with no public
    accessor.
    """
    hookable = optimizer_hook_container(optimizer)
    return hookable._pre_update_hooks if timing == 'pre' else (
        hookable._post_update_hooks)


def optimizer_hook_container(optimizer):
    """Returns the object holding the optimizer's hook dicts,
    ``optimizer._hookable`` (see :func:`optimizer_hooks`)."""
    return optimizer._hookable


#: Attributes of Chainer's function nodes that the FLOP formulas
#: (``costs/flops/``) and their memo's keys read, which have no public
#: accessor: the shape ``SumTo`` sums to and ``BroadcastTo`` broadcasts to
#: (``functions/math/sum.py``, ``functions/array/broadcast.py``), and the
#: input shape of ``GetItemGrad`` and of the average poolings
#: (``functions/array/get_item.py``, ``functions/pooling/
#: average_pooling_2d.py``).  Names, read with ``getattr``: the memo keys
#: nodes by attribute names.
NODE_SHAPE = '_shape'
NODE_IN_SHAPE = '_in_shape'


def retained_input_indexes(node):
    """Returns the indexes of the inputs ``node`` retained, or ``None``.

    ``FunctionNode.get_retained_inputs()`` wraps each in a new ``Variable``
    and ``get_retained_outputs()`` raises once its outputs are gone; the
    memory count needs the arrays only, read where Chainer keeps them
    (``chainer/function_node.py``, ``retain_inputs``).
    """
    return node._input_indexes_to_retain


def retained_output_arrays(node):
    """Returns the output arrays ``node`` retained, or ``None`` (Chainer's
    ``_retained_output_data``; see :func:`retained_input_indexes`)."""
    return node._retained_output_data


def persistent_names(link):
    """Returns the names of ``link``'s persistent values.

    ``Link.register_persistent`` and ``add_persistent`` keep them in
    ``link._persistent``; Chainer 7 lists them publicly only through
    ``serialize``.
    """
    return link._persistent


def fp32_master(update_rule):
    """Returns the float32 master copy of a float16 parameter, or ``None``.

    With ``optimizer.use_fp32_update()``, Chainer 7.8.1's
    ``UpdateRule.update`` keeps it in ``_fp32_param``
    (``chainer/optimizer.py``, lines 261-305), its gradient ``None``
    between updates.
    """
    return getattr(update_rule, '_fp32_param', None)

"""Every reach into Chainer 7.8.1's private parts, each with its reason
(docs/internals.md, "Why hooks are registered globally, and filtered").
"""

import chainer
from chainer import _backprop_utils
from chainer import configuration


# chainer.config.train goes through LocalConfig.__getattr__ (about 400 ns,
# a whole empty link hook's cost): read the thread-local dict directly.
_local = configuration.config._local
_global = configuration.global_config

# Read directly, for speed, where named: ``Variable._node`` and
# ``VariableNode._creator_node`` (link_hooks/_output_grads.py, per link call).

# No postprocess runs for a forward or backward step that raises: the slow
# paths find running calls by these frames (a step's local ``func``).
LINK_CALL_CODE = chainer.Link.__call__.__code__
BACKWARD_STEP_CODE = _backprop_utils.backprop_step.__code__


def is_train():
    value = _local.__dict__.get('train', _local)
    if value is _local:
        return _global.train
    return value


def is_recomputing():
    return _read('in_recomputing')


def step_flags():
    """``(in_recomputing, enable_backprop)``: read per gradient node."""
    local = _local.__dict__
    recomputing = local.get('in_recomputing', _local)
    backprop = local.get('enable_backprop', _local)
    return (_global.in_recomputing if recomputing is _local else recomputing,
            _global.enable_backprop if backprop is _local else backprop)


def keeps_graph_on_report():
    return _read('keep_graph_on_report')


def _read(name):
    value = _local.__dict__.get(name, _local)
    return getattr(_global, name) if value is _local else value


def link_hooks():
    return chainer._get_link_hooks()


def extension_entries(trainer):
    return trainer._extensions  # get_extension takes one name


def written_file(extension):
    """The file name a Chainer extension writes in ``out``, or ``None``
    (LogReport, PlotReport, VariableStatisticsPlot, DumpGraph)."""
    return next((name for name in (
        getattr(extension, a, None)
        for a in ('_log_name', '_file_name', '_filename'))
        if isinstance(name, str)), None)


def optimizer_hooks(optimizer, timing):
    """The optimizer's ``'pre'`` or ``'post'`` hooks by name, in order."""
    return getattr(optimizer_hook_container(optimizer),
                   f'_{timing}_update_hooks')


def optimizer_hook_container(optimizer):
    return optimizer._hookable


# Node attributes the FLOP formulas read (no accessor): the shape of SumTo,
# BroadcastTo; the input shape of GetItemGrad and the average poolings.
NODE_SHAPE = '_shape'
NODE_IN_SHAPE = '_in_shape'
# A node's retained inputs' indexes (get_retained_inputs() wraps each anew).
NODE_RETAINED_INPUTS = '_input_indexes_to_retain'


def persistent_names(link):
    """``link``'s persistent names (public only through ``serialize``)."""
    return link._persistent


# use_fp32_update(): an update rule's fp32 master copy (getattr, or None).
UPDATE_RULE_FP32_MASTER = '_fp32_param'

"""Every reach into Chainer 7.8.1's private parts, each with its reason.

Everything else the package uses of Chainer is public (docs/internals.md,
"Why hooks are registered globally, and filtered").
"""

import chainer
from chainer import _backprop_utils
from chainer import configuration


# chainer.config.train goes through LocalConfig.__getattr__ (about 400 ns,
# a whole empty link hook's cost): read the thread-local dict that
# chainer.using_config writes, else the global configuration.
_local = configuration.config._local
_global = configuration.global_config

#: ``Link.__call__``'s code: Chainer calls no ``forward_postprocess`` for a
#: forward that raises, so the slow paths find running calls by frames.
LINK_CALL_CODE = chainer.Link.__call__.__code__
#: One backward step's code (its local ``func`` is the node): likewise no
#: ``backward_postprocess`` for a step that raises.
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
    """Returns ``(in_recomputing, enable_backprop)`` of the calling thread,
    in one call: a function hook reads them for every gradient node."""
    local = _local.__dict__
    recomputing = local.get('in_recomputing', _local)
    backprop = local.get('enable_backprop', _local)
    return (_global.in_recomputing if recomputing is _local else recomputing,
            _global.enable_backprop if backprop is _local else backprop)


def keeps_graph_on_report():
    """Returns ``chainer.config.keep_graph_on_report`` for the thread."""
    return _read('keep_graph_on_report')


def _read(name):
    # is_train spells this out: it is on the hot path.
    value = _local.__dict__.get(name, _local)
    return getattr(_global, name) if value is _local else value


def link_hooks():
    """Returns the calling thread's global link hooks, by name
    (``chainer._get_link_hooks()``: no public accessor)."""
    return chainer._get_link_hooks()


def extension_entries(trainer):
    """Returns the trainer's extension entries by name (``_extensions``;
    ``get_extension`` takes one name)."""
    return trainer._extensions


#: Where Chainer's writing extensions keep their file name in ``out``:
#: ``LogReport._log_name``, ``PlotReport._file_name``,
#: ``VariableStatisticsPlot._filename``, ``DumpGraph._filename``.
_FILE_ATTRIBUTES = ('_log_name', '_file_name', '_filename')


def written_file(extension):
    """Returns the file name a Chainer extension writes in the trainer's
    ``out``, or ``None`` (ProfileReport refuses to write its page over it).
    """
    for attribute in _FILE_ATTRIBUTES:
        name = getattr(extension, attribute, None)
        if isinstance(name, str):
            return name
    return None


def optimizer_hooks(optimizer, timing):
    """Returns the optimizer's ``'pre'`` or ``'post'`` hooks by name, in
    call order (``optimizer._hookable``: no public accessor)."""
    hookable = optimizer_hook_container(optimizer)
    return hookable._pre_update_hooks if timing == 'pre' else (
        hookable._post_update_hooks)


def optimizer_hook_container(optimizer):
    """Returns ``optimizer._hookable``, which holds its hook dicts."""
    return optimizer._hookable


#: Node attributes the FLOP formulas (``costs/flops/``) and their memo keys
#: read by name, with no public accessor: the shape ``SumTo`` sums to and
#: ``BroadcastTo`` broadcasts to, and the input shape of ``GetItemGrad`` and
#: of the average poolings.
NODE_SHAPE = '_shape'
NODE_IN_SHAPE = '_in_shape'


#: The attribute of a node holding the indexes of the inputs it retained,
#: or ``None`` (``get_retained_inputs()`` wraps each in a new Variable; the
#: memory count needs the arrays only, read with ``getattr``: no call).
#: A retained output is in the node's attributes.
NODE_RETAINED_INPUTS = '_input_indexes_to_retain'


def persistent_names(link):
    """Returns the names of ``link``'s persistent values (Chainer 7 lists
    them publicly only through ``serialize``)."""
    return link._persistent


#: The attribute of an update rule holding the float32 master copy of a
#: float16 parameter under ``use_fp32_update()`` (``getattr`` with a
#: default of ``None``: none; its gradient ``None`` between updates).
UPDATE_RULE_FP32_MASTER = '_fp32_param'

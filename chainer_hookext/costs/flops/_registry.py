"""The one table of formulas, ``{node class: Formula}``, and
:func:`register`, as ``torch.utils.flop_counter.register_flop_formula``
(docs/flops.md, "The registry")."""

import collections

#: The cost of one node: FLOPs and bytes moved.
Cost = collections.namedtuple('Cost', ('flops', 'bytes'))
#: What a formula returns: the node's FLOPs and its output elements.
Work = collections.namedtuple('Work', ('flops', 'outputs'))

#: One entry of :data:`FORMULAS` (``keyed_by`` ``None``: not memoized).
Formula = collections.namedtuple('Formula', ('function', 'keyed_by'))

#: {node class: :class:`Formula`}.
FORMULAS = {}
#: {node class: why it has no formula}: Chainer's classes left unknown.
NOT_COUNTED = {}


def register(*classes, keyed_by=None):
    """Registers the decorated function as the formula of ``classes``.

    Args:
        classes (types): ``FunctionNode`` or old-style ``Function`` classes.
        keyed_by (tuple of str): Memoize the cost by the inputs' shapes and
            dtypes and these node attributes (``None``: never).

    >>> import chainer
    >>> from chainer_hookext.costs import flops
    >>> class Twice(chainer.FunctionNode):
    ...     def forward(self, inputs):
    ...         return inputs[0] * 2,
    >>> @flops.register(Twice, keyed_by=())
    ... def _twice(node, in_data):
    ...     return flops.Work(flops=in_data[0].size,
    ...                       outputs=in_data[0].size)
    >>> del flops.FORMULAS[Twice]
    """
    for cls in classes:
        if cls in FORMULAS:
            name = cls.__name__
            raise ValueError(
                f'register({name}): {name} has a formula already '
                f'({FORMULAS[cls].function.__qualname__}); delete '
                f'FORMULAS[{name}] first to replace it')
    if keyed_by is not None and not isinstance(keyed_by, tuple):
        raise TypeError(f'register(keyed_by={keyed_by!r}): give a tuple of '
                        'attribute names, or None')

    def decorator(function):
        for cls in classes:
            NOT_COUNTED.pop(cls, None)
            FORMULAS[cls] = Formula(function, keyed_by)
        return function
    return decorator


def not_counted(reason, *classes):
    """Lists ``classes`` as known and not counted, for ``reason``."""
    for cls in classes:
        if cls in FORMULAS or cls in NOT_COUNTED:
            raise ValueError(
                f'not_counted({reason!r}, {cls.__name__}): listed already')
        NOT_COUNTED[cls] = reason

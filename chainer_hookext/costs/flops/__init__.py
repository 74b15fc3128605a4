"""FLOPs and bytes of one function node, from its inputs: :func:`count`
looks the node's class up in :data:`FORMULAS`, registered beside each
formula with :func:`register` (docs/flops.md, "Convention", "The registry")."""

import warnings

from chainer import function

from chainer_hookext.costs.flops import _array  # NOQA: registers
from chainer_hookext.costs.flops import _connection  # NOQA
from chainer_hookext.costs.flops import _elementwise  # NOQA
from chainer_hookext.costs.flops import _loss  # NOQA
from chainer_hookext.costs.flops import _normalization  # NOQA
from chainer_hookext.costs.flops import _not_counted  # NOQA
from chainer_hookext.costs.flops import _pooling  # NOQA
from chainer_hookext.costs.flops import _reduction  # NOQA
from chainer_hookext.costs.flops._registry import Cost
from chainer_hookext.costs.flops._registry import FORMULAS
from chainer_hookext.costs.flops._registry import NOT_COUNTED
from chainer_hookext.costs.flops._registry import Work
from chainer_hookext.costs.flops._registry import not_counted
from chainer_hookext.costs.flops._registry import register

__all__ = ['Cost', 'FORMULAS', 'NOT_COUNTED', 'Work', 'count', 'name_of',
           'not_counted', 'register']


def count(node, in_data):
    """The :class:`Cost` of ``node`` applied to ``in_data``, or ``None``
    without a formula or when it failed."""
    # Every node of an iteration passes here; the memo (docs/flops.md,
    # "Memo") takes a third of the instructions of computing the cost.
    cls = type(node)
    if cls is function.FunctionAdapter:  # an old-style Function
        node = node.function
        cls = type(node)
    entry = FORMULAS.get(cls)
    if entry is None:
        return None
    formula, attributes = entry
    if attributes is None:
        return _count(node, cls, formula, in_data)
    try:
        if len(in_data) == 2:
            a, b = in_data
            key = (cls, a.shape, a.dtype, b.shape, b.dtype)
        elif len(in_data) == 3:
            a, b, c = in_data
            key = (cls, a.shape, a.dtype, b.shape, b.dtype, c.shape, c.dtype)
        elif len(in_data) == 1:
            a, = in_data
            key = (cls, a.shape, a.dtype)
        else:
            return _count(node, cls, formula, in_data)
        if attributes:
            key += tuple([getattr(node, name) for name in attributes])
        cost = _memo.get(key)
    except (AttributeError, TypeError):  # an input not kept; unhashable
        return _count(node, cls, formula, in_data)
    if cost is None:
        if len(_memo) >= _MEMO_SIZE:  # shapes that change all the time
            _memo.clear()
        cost = _memo[key] = _count(node, cls, formula, in_data)
    return cost


def _count(node, cls, formula, in_data):
    try:
        work = formula(node, in_data)
        if type(work) is not Work:  # a user's (flops, outputs) pair
            work = Work._make(work)
    except Exception as e:  # never the training's end: an unknown
        if cls not in _failed:
            _failed.add(cls)
            shapes = [getattr(x, 'shape', None) for x in in_data]
            warnings.warn(
                f'chainer_hookext: the FLOPs formula of {cls.__name__} '
                f'failed on inputs of shapes {shapes} '
                f'({type(e).__name__}: {e}); its nodes are counted as '
                'unknown. Please report it.', RuntimeWarning, stacklevel=2)
        return None
    read = 0
    itemsize = 0  # of the first floating input: the outputs'
    for x in in_data:
        if x is not None:
            read += x.nbytes
            if not itemsize and x.dtype.kind == 'f':
                itemsize = x.itemsize
    return _new_cost(Cost, (work.flops, read + work.outputs * (itemsize or 4)))


def name_of(node):
    """The name of ``node``'s class, as the report lists unknowns."""
    if type(node) is function.FunctionAdapter:
        node = node.function
    return type(node).__name__


_new_cost = tuple.__new__  # Cost(...) without namedtuple's Python __new__
_memo = {}  # {(class, shape, dtype, ..., attributes): Cost}
_failed = set()  # the classes whose formula raised: warned once
_MEMO_SIZE = 4096

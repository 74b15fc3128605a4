"""Formulas many node classes share: elementwise, copies, reductions."""

import math

import numpy

from chainer_hookext.costs.flops._registry import Work


def elementwise(per_element, outputs=1):
    """``per_element`` FLOPs, ``outputs`` outputs per broadcast element."""
    def formula(node, in_data):
        n = broadcast_size([x.shape for x in in_data if x is not None])
        return Work(per_element * n, outputs * n)
    formula.__qualname__ = f'elementwise({per_element}, {outputs})'
    return formula


def broadcast_size(shapes):
    """The output size of an elementwise node of inputs of ``shapes``."""
    first = shapes[0]
    for shape in shapes[1:]:
        if shape != first:
            try:  # (3, 1) * (4,) is 12 elements
                return math.prod(numpy.broadcast_shapes(*shapes))
            except ValueError:  # not broadcast (Accuracy, PReLU): the largest
                return max([math.prod(shape) for shape in shapes])
    return math.prod(first)


def copy(node, in_data):
    """Reshapes, views, transposes, flips: bytes only."""
    return Work(0, in_data[0].size)


def gather_copy(node, in_data):
    """Concatenations and stacks: bytes only."""
    return Work(0, sum([x.size for x in in_data]))


def reduced_size(x, axis):
    """The size of ``x`` reduced over ``axis`` (``None``, int or tuple)."""
    if axis is None:
        return 1
    reduced = math.prod([x.shape[a] for a in (
        axis if isinstance(axis, tuple) else (axis,))])
    return x.size // max(1, reduced)


def reduction(node, in_data):
    """A sum, max, min or product over ``node.axis``: one per element."""
    x = in_data[0]
    return Work(x.size, reduced_size(x, getattr(node, 'axis', None)))


def broadcast_grad(per_element):
    """A binary elementwise gradient, plus a ``sum_to`` per smaller input."""
    def formula(node, in_data):
        x0, x1, gy = in_data
        n = gy.size
        reduced = (n if x0.size < n else 0) + (n if x1.size < n else 0)
        return Work(per_element * n + reduced, x0.size + x1.size)
    formula.__qualname__ = f'broadcast_grad({per_element})'
    return formula


def nothing(node, in_data):
    """A node whose work is the nodes it applies (counted each)."""
    return Work(0, 0)


def copy_with(per_element, outputs=1):
    """``per_element`` FLOPs, ``outputs`` outputs per first input element."""
    def formula(node, in_data):
        n = in_data[0].size
        return Work(per_element * n, outputs * n)
    formula.__qualname__ = (f'copy_with({per_element})' if outputs == 1
                            else f'copy_with({per_element}, {outputs})')
    return formula


def shaped(attribute, scatter=False):
    """Outputs of the shape ``node.<attribute>``: bytes only, or with
    ``scatter`` an addition per element of the last input (gy)."""
    def formula(node, in_data):
        return Work(in_data[-1].size if scatter else 0,
                    math.prod(getattr(node, attribute)))
    formula.__qualname__ = (f'shaped({attribute!r}, scatter=True)'
                            if scatter else f'shaped({attribute!r})')
    return formula

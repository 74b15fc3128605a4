"""Saving timing state through any Chainer serializer (npz, hdf5).

One encoding serves the timer's stored call trees,
:class:`~chainer_hookext.TimedLinks`' baseline and
:class:`~chainer_hookext.TimedLoop`'s figures: a table of rows, each row
some labels (strings and integers, saved as UTF-8 JSON in a ``uint8``
array, which every serializer stores) and numeric fields (one ``float64``
array per field).
"""

import json
import warnings

import numpy
from chainer import serializer as serializer_module


def is_loading(serializer):
    """Returns whether ``serializer`` reads (a Chainer deserializer)."""
    return isinstance(serializer, serializer_module.Deserializer)


def save_rows(serializer, labels, columns):
    """Writes a table with ``serializer``.

    Args:
        serializer: A Chainer serializer.
        labels (list of list): The labels of each row (JSON values).
        columns (dict): ``{field: list of numbers}``, one per row.
    """
    data = json.dumps(labels).encode('utf-8')
    serializer('labels', numpy.frombuffer(data, numpy.uint8).copy())
    for field, values in columns.items():
        serializer(field, numpy.asarray(values, numpy.float64))


def load_rows(serializer, fields):
    """Reads what :func:`save_rows` wrote.

    Args:
        serializer: A Chainer deserializer.
        fields (tuple of str): The numeric fields to read.

    Returns:
        list: ``(labels, {field: value})`` per row; ``None`` when a
        non-strict deserializer has no table.

    Raises:
        KeyError: A strict deserializer has no table.
        ValueError: The columns do not match the labels.
    """
    labels = serializer('labels', None)
    if labels is None:
        return None
    labels = json.loads(
        numpy.asarray(labels, numpy.uint8).tobytes().decode('utf-8'))
    columns = {}
    for field in fields:
        values = numpy.asarray(serializer(field, None), numpy.float64)
        columns[field] = values.ravel()
        if len(columns[field]) != len(labels):
            raise ValueError(
                'the saved timing state is inconsistent: {} rows of labels, '
                '{} values of {!r}.'.format(
                    len(labels), len(columns[field]), field))
    return [(row, {f: float(columns[f][i]) for f in fields})
            for i, row in enumerate(labels)]


def warn_missing(name, error, consequence):
    """Warns that a snapshot holds no state for the extension ``name``.

    A snapshot taken before the extension was added: the run goes on, with
    ``consequence`` (e.g. ``'Timing starts afresh.'``).
    """
    warnings.warn(
        '{}: the snapshot has no state for it ({}); it was probably taken '
        'before this extension was added.  {}'.format(
            name, error, consequence), RuntimeWarning)

"""State saved through any Chainer serializer (npz, hdf5) as tables: labels
as UTF-8 JSON in a ``uint8`` array, one ``float64`` array per field.  A
missing entry raises :class:`MissingState` (docs/timing.md, "Resume").
"""

import json
import warnings

import numpy
from chainer import serializer as serializer_module
from chainer.serializers import hdf5


class MissingState(KeyError):
    """A snapshot lacks an entry: taken before the extension was added."""


def is_loading(serializer):
    """Whether ``serializer`` is a Chainer deserializer."""
    return isinstance(serializer, serializer_module.Deserializer)


def _missing(deserializer, key):
    return MissingState(f"{getattr(deserializer, 'path', '')}{key}")


def _check_group(deserializer, key):
    # HDF5Deserializer gives a missing group as group=None, then raises
    # ValueError or AttributeError.
    if (isinstance(deserializer, hdf5.HDF5Deserializer)
            and deserializer.group is None):
        raise _missing(deserializer, key)


def read(deserializer, key):
    """The array saved as ``key``, else :class:`MissingState` (strict or
    not, npz or hdf5)."""
    _check_group(deserializer, key)
    try:
        value = deserializer(key, None)
    except KeyError as e:
        raise _missing(deserializer, key) from e
    if value is None:  # a non-strict deserializer's default
        raise _missing(deserializer, key)
    return value


def child(deserializer, key):
    """``deserializer[key]``; :class:`MissingState` for hdf5's missing group.
    """
    _check_group(deserializer, key)
    return deserializer[key]


def save_rows(serializer, labels, columns):
    """Writes a table: ``labels`` (a list of JSON values per row) and
    ``columns`` (``{field: list of numbers}``)."""
    data = json.dumps(labels).encode('utf-8')
    serializer('labels', numpy.frombuffer(data, numpy.uint8).copy())
    for field, values in columns.items():
        serializer(field, numpy.asarray(values, numpy.float64))


def load_rows(serializer, fields, optional=()):
    """``(labels, {field: value})`` per row of what :func:`save_rows` wrote;
    ``optional`` fields (an earlier version's may lack them) read as zeros.
    """
    labels = json.loads(numpy.asarray(
        read(serializer, 'labels'), numpy.uint8).tobytes().decode('utf-8'))
    columns = {}
    for field in fields:
        try:
            values = read(serializer, field)
        except MissingState:
            if field not in optional:
                raise
            values = numpy.zeros(len(labels))
        values = columns[field] = numpy.asarray(values, numpy.float64).ravel()
        if len(values) != len(labels):
            raise ValueError(
                'the saved timing state is inconsistent: '
                f'{len(labels)} rows of labels, {len(values)} '
                f'values of {field!r}.')
    return [(row, {f: float(columns[f][i]) for f in fields})
            for i, row in enumerate(labels)]


def warn_missing(name, error, consequence):
    """Warns that a snapshot holds no state for the extension ``name``."""
    warnings.warn(
        f'{name}: the snapshot has no state for it ({error}); it was '
        f'probably taken before this extension was added.  {consequence}',
        RuntimeWarning)

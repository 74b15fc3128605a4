"""The layout of the reported timing keys: the one place that spells them.

For each timed link, by its name in the reporter's shape (``main``,
``main/predictor/l1``), :class:`~chainer_hookext.TimedLinks` reports one key
per figure::

    time/main/predictor/l1                 forward, inclusive
    time/main/predictor/l1/self            forward, self
    time/main/predictor/l1/backward        backward, inclusive
    time/main/predictor/l1/backward/self   backward, self
    time/(outside)/backward                backward of nodes made outside

and evaluation-mode figures under ``validation/time/``.  Gathered over
ChainerMN workers, each of those keys is the mean over workers, with the
spread below it (``.../max``, ``.../min``, ``.../slowest_rank``).

:func:`figures` builds the keys of one entry; :func:`check_link_names`
refuses, before training, a link whose name would make one of its keys
another's.  To add a reported figure, add its field to :data:`FIELD_SUFFIXES`.
"""

import collections


#: Prefix of training-mode figures (per training iteration).
TRAIN_PREFIX = 'time/'
#: Prefix of evaluation-mode figures (per outermost evaluation call).
EVAL_PREFIX = 'validation/time/'
#: The bucket of backward steps of nodes created outside every timed link.
OUTSIDE = '(outside)'

#: Suffix of each reported field of an entry, in report order.
FIELD_SUFFIXES = collections.OrderedDict([
    ('elapsed_time', ''),
    ('self_time', '/self'),
    ('backward_time', '/backward'),
    ('backward_self_time', '/backward/self'),
])
#: The backward fields, reported only when backward is timed.
BACKWARD_FIELDS = ('backward_time', 'backward_self_time')
#: The fields of the :data:`OUTSIDE` bucket, which has no forward.
OUTSIDE_FIELDS = ('backward_time',)
#: Suffixes of the spread of a figure over ChainerMN workers.
SPREAD_SUFFIXES = collections.OrderedDict([
    ('max', '/max'), ('min', '/min'), ('slowest_rank', '/slowest_rank')])


def prefix(mode):
    """Returns the key prefix of ``mode`` (``'train'`` or ``'eval'``)."""
    return TRAIN_PREFIX if mode == 'train' else EVAL_PREFIX


def reported_fields(key, backward):
    """Returns the fields reported for the entry ``key``.

    Args:
        key (str): A link name, or :data:`OUTSIDE`.
        backward (bool): Whether backward is timed (training mode).
    """
    if key == OUTSIDE:
        return OUTSIDE_FIELDS
    if backward:
        return tuple(FIELD_SUFFIXES)
    return tuple(f for f in FIELD_SUFFIXES if f not in BACKWARD_FIELDS)


def figure_key(mode, key, field):
    """Returns the reported key of one field of one entry.

    >>> figure_key('train', 'main/predictor', 'backward_self_time')
    'time/main/predictor/backward/self'
    >>> figure_key('eval', 'main', 'elapsed_time')
    'validation/time/main'
    """
    return prefix(mode) + key + FIELD_SUFFIXES[field]


def figures(mode, entry, backward):
    """Returns ``{reported key: seconds}`` of one entry.

    Args:
        mode (str): ``'train'`` or ``'eval'``.
        entry: An object with the fields of :data:`FIELD_SUFFIXES` and
            ``key`` (e.g. a :class:`~.records.Entry`).
        backward (bool): Whether backward is timed.
    """
    return {figure_key(mode, entry.key, field): getattr(entry, field)
            for field in reported_fields(entry.key, backward)}


def spread_key(figure, statistic):
    """Returns the key of a statistic of a figure over workers.

    >>> spread_key('time/main/self', 'slowest_rank')
    'time/main/self/slowest_rank'
    """
    return figure + SPREAD_SUFFIXES[statistic]


def check_link_names(call, names, backward, spread):
    """Refuses link names whose keys would collide with other keys.

    A link named ``self`` has the key of its parent's self time; ``backward``
    (with backward timing) its parent's backward time; ``max``, ``min`` or
    ``slowest_rank`` (gathered over workers) its parent's spread.

    Args:
        call (str): The class to name in the error.
        names (iterable of str): Names of the links in scope.
        backward (bool): Backward is timed.
        spread (bool): Figures are gathered over ChainerMN workers.

    Raises:
        ValueError: Naming the link, its key, and what to do.

    >>> check_link_names('TimedLinks', ['main', 'main/max'], False, True)
    Traceback (most recent call last):
    ...
    ValueError: TimedLinks: the link 'main/max' would report `time/main/max`, \
the spread over workers of its parent; rename the link or leave it out \
with `links=`.
    """
    clashes = {'self': 'the self time of its parent'}
    if backward:
        clashes['backward'] = ('the backward time of its parent (or pass '
                               '`backward=False`)')
    if spread:
        clashes.update(dict.fromkeys(
            SPREAD_SUFFIXES, 'the spread over workers of its parent'))
    for name in names:
        last = name.rsplit('/', 1)[-1]
        if '/' in name and last in clashes:
            raise ValueError(
                '{}: the link {!r} would report `{}{}`, {}; rename the link '
                'or leave it out with `links=`.'.format(
                    call, name, TRAIN_PREFIX, name, clashes[last]))

"""Checks of the arguments of the public classes, one rule for all.

NumPy booleans and integers pass as Python's (as Chainer takes them) and are
returned converted.  A value of the wrong type raises ``TypeError``, a value
of the right type out of range ``ValueError``; the message names the call,
shows the value (``numpy.int64(3)``, not ``3``) and says what works.
"""

import collections
import numbers

import numpy

from chainer_hookext import _chainer


#: The modes a hook or an extension acts in: ``train`` (bool) while
#: ``chainer.config.train`` is true, ``eval`` (bool) while it is false.
Modes = collections.namedtuple('Modes', 'train eval')


def shown(value):
    """Returns ``repr(value)``, with the type of a NumPy scalar.

    >>> shown(numpy.int64(3)), shown(3)
    ('numpy.int64(3)', '3')
    """
    if isinstance(value, numpy.generic):
        return 'numpy.{}({!r})'.format(type(value).__name__, value.item())
    return repr(value)


def check_flag(call, name, value, none=None):
    """Returns ``value`` as a ``bool``; raises unless it is True or False.

    Args:
        call (str): The call to name, e.g. ``'TimedLoop'``.
        name (str): The argument's name, e.g. ``'print_report'``.
        value: The value given.
        none (str): What ``None`` means, when it is accepted too (returned
            as it is); ``None`` (default) refuses it.

    Raises:
        TypeError: ``value`` is not a ``bool`` or ``numpy.bool_``.

    >>> check_flag('TimedLoop', 'print_report', numpy.True_)
    True
    >>> check_flag('TimedLoop', 'print_report', numpy.int64(1))
    Traceback (most recent call last):
    ...
    TypeError: `TimedLoop(print_report=numpy.int64(1))` is not a flag: use \
True or False (a bool or numpy.bool_).
    """
    if value is None and none is not None:
        return None
    if not isinstance(value, (bool, numpy.bool_)):
        raise TypeError(
            '`{}({}={})` is not a flag: use True or False (a bool or '
            'numpy.bool_){}.'.format(call, name, shown(value), '' if (
                none is None) else ', or None ({})'.format(none)))
    return bool(value)


def check_int(call, name, value, least):
    """Returns ``value`` as an ``int``; raises unless it is one >= ``least``.

    Args:
        call (str): The call to name, e.g. ``'Timeline'``.
        name (str): The argument's name, e.g. ``'iterations'``.
        value: The value given.
        least (int): The smallest value allowed.

    Raises:
        TypeError: ``value`` is not an integer (Python's or NumPy's; a bool
            is not one).
        ValueError: ``value`` is below ``least``.

    >>> check_int('Timeline', 'iterations', numpy.int64(3), 1)
    3
    >>> check_int('Timeline', 'iterations', 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: `Timeline(iterations=0)` is below 1: use an integer of at \
least 1.
    """
    what = 'use an integer of at least {}.'.format(least)
    if isinstance(value, (bool, numpy.bool_)) or not isinstance(
            value, numbers.Integral):
        raise TypeError('`{}({}={})` is not an integer: {}'.format(
            call, name, shown(value), what))
    if value < least:
        raise ValueError('`{}({}={})` is below {}: {}'.format(
            call, name, shown(value), least, what))
    return int(value)


def check_positive(call, name, value):
    """Returns ``value`` as a ``float``; raises unless it is a finite number
    above 0.

    Raises:
        TypeError: ``value`` is not a real number (a bool is not one).
        ValueError: ``value`` is not finite and above 0.

    >>> check_positive('TimedLinks', 'peak_flops', numpy.float32(2e9))
    2000000000.0
    >>> check_positive('TimedLinks', 'peak_flops', 0)
    Traceback (most recent call last):
    ...
    ValueError: `TimedLinks(peak_flops=0)` is not above 0: use a finite \
number above 0, e.g. 1e12.
    """
    what = 'use a finite number above 0, e.g. 1e12.'
    if isinstance(value, (bool, numpy.bool_)) or not isinstance(
            value, numbers.Real):
        raise TypeError('`{}({}={})` is not a number: {}'.format(
            call, name, shown(value), what))
    if not 0 < value < float('inf'):
        raise ValueError('`{}({}={})` is not above 0: {}'.format(
            call, name, shown(value), what))
    return float(value)


def check_name(call, name, value):
    """Returns ``value``; raises unless it is a non-empty string.

    Raises:
        TypeError: ``value`` is not a string.
        ValueError: ``value`` is empty.
    """
    if not isinstance(value, str):
        raise TypeError('`{}({}={})` is not a name: use a non-empty '
                        'string.'.format(call, name, shown(value)))
    if not value:
        raise ValueError('`{}({}={!r})` is not a name: use a non-empty '
                         'string.'.format(call, name, value))
    return value


def check_choice(call, name, value, choices, what):
    """Returns the choice ``value`` is; raises unless it is one of ``choices``.

    A value of a type no choice has raises ``TypeError``; one of the right
    type but no choice ``ValueError``.  NumPy scalars pass as Python's
    (``numpy.str_('ms')`` is ``'ms'``, ``numpy.True_`` is ``True``).

    Args:
        call (str): The call to name, e.g. ``'TimerHook.summary'``.
        name (str): The argument's name.
        value: The value given.
        choices (tuple): The values that work, in the order to show them.
        what (str): What a choice is, e.g. ``'a known unit'``.

    Raises:
        TypeError: ``value``'s type is none of the choices'.
        ValueError: ``value`` is of a choice's type but no choice.

    >>> check_choice('TimerHook.print_report', 'unit', 'min', ('sec', 'ms'),
    ...              'a known unit')
    Traceback (most recent call last):
    ...
    ValueError: `TimerHook.print_report(unit='min')` is not a known unit: \
use one of 'sec', 'ms'.
    >>> check_choice('TimerHook.print_report', 'unit', 1, ('sec', 'ms'),
    ...              'a known unit')
    Traceback (most recent call last):
    ...
    TypeError: `TimerHook.print_report(unit=1)` is not a str: use one of \
'sec', 'ms'.
    """
    plain = value.item() if isinstance(value, numpy.generic) else value
    for choice in choices:
        if plain is choice or (type(plain) is type(choice)
                               and plain == choice):
            return choice
    use = 'use one of {}.'.format(', '.join(map(repr, choices)))
    types = []
    for choice in choices:
        shown_type = 'None' if choice is None else type(choice).__name__
        if shown_type not in types:
            types.append(shown_type)
    if type(plain) not in {type(c) for c in choices}:
        raise TypeError('`{}({}={})` is not a {}: {}'.format(
            call, name, shown(value), ' or '.join(types), use))
    raise ValueError('`{}({}={})` is not {}: {}'.format(
        call, name, shown(value), what, use))


def check_modes(call, train, eval):
    """Returns the flags ``(train, eval)`` as :class:`Modes` of bools.

    Raises:
        TypeError: A flag is not True or False (:func:`check_flag`).
        ValueError: Both are false: nothing would ever act.
    """
    train = check_flag(call, 'train', train)
    eval = check_flag(call, 'eval', eval)
    if not (train or eval):
        raise ValueError(
            '`{}(train=False, eval=False)` would never fire: enable '
            'training mode, evaluation mode or both.'.format(call))
    return Modes(train, eval)


def check_one_per_trainer(trainer, extension, why, instead):
    """Raises ``ValueError`` if ``trainer`` has another extension of
    ``extension``'s class.

    Args:
        trainer (~chainer.training.Trainer): The trainer.
        extension: The extension being initialized.
        why (str): What two of them would do, e.g. ``'write the same
            files'``.
        instead (str): What works, e.g. ``'use one Timeline'``.
    """
    cls = type(extension)
    others = [name for name, entry in
              _chainer.extension_entries(trainer).items()
              if isinstance(entry.extension, cls)
              and entry.extension is not extension]
    if others:
        raise ValueError(
            '{0}: the trainer has another {0} extension ({1}), which would '
            '{2}; {3}.'.format(cls.__name__, ', '.join(
                repr(n) for n in others), why, instead))

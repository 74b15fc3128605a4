"""Argument checks of the public classes: ``TypeError`` for a wrong type,
``ValueError`` for a wrong value; NumPy scalars pass as Python's.
"""

import collections
import numbers

import numpy

from chainer_hookext import _chainer


Modes = collections.namedtuple('Modes', 'train eval')


def shown(value):
    """Returns ``repr(value)``, with the type of a NumPy scalar.

    >>> shown(numpy.int64(3)), shown(3)
    ('numpy.int64(3)', '3')
    """
    if isinstance(value, numpy.generic):
        return f'numpy.{type(value).__name__}({value.item()!r})'
    return repr(value)


def _bad(call, name, value):
    return f'`{call}({name}={shown(value)})`'


def check_flag(call, name, value, none=None):
    """``value`` as a ``bool``; ``None`` too when ``none`` says what it is.

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
        also = '' if none is None else f', or None ({none})'
        raise TypeError(f'{_bad(call, name, value)} is not a flag: use True '
                        f'or False (a bool or numpy.bool_){also}.')
    return bool(value)


def check_int(call, name, value, least):
    """``value`` as an ``int`` of at least ``least`` (no bool).

    >>> check_int('Timeline', 'iterations', numpy.int64(3), 1)
    3
    >>> check_int('Timeline', 'iterations', 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: `Timeline(iterations=0)` is below 1: use an integer of at \
least 1.
    """
    what = f'use an integer of at least {least}.'
    _check_type(call, name, value, numbers.Integral, 'an integer', what)
    if value < least:
        raise ValueError(f'{_bad(call, name, value)} is below {least}: '
                         f'{what}')
    return int(value)


def _check_type(call, name, value, kind, noun, what):
    if isinstance(value, (bool, numpy.bool_)) or not isinstance(value, kind):
        raise TypeError(f'{_bad(call, name, value)} is not {noun}: {what}')


def check_positive(call, name, value):
    """``value`` as a ``float``, finite and above 0.

    >>> check_positive('TimedLinks', 'peak_flops', numpy.float32(2e9))
    2000000000.0
    >>> check_positive('TimedLinks', 'peak_flops', 0)
    Traceback (most recent call last):
    ...
    ValueError: `TimedLinks(peak_flops=0)` is not above 0: use a finite \
number above 0, e.g. 1e12.
    """
    what = 'use a finite number above 0, e.g. 1e12.'
    _check_type(call, name, value, numbers.Real, 'a number', what)
    if not 0 < value < float('inf'):
        raise ValueError(f'{_bad(call, name, value)} is not above 0: {what}')
    return float(value)


def check_name(call, name, value):
    """``value``, a non-empty string."""
    if not isinstance(value, str):
        raise TypeError(f'{_bad(call, name, value)} is not a name: use a '
                        'non-empty string.')
    if not value:
        raise ValueError(f'`{call}({name}={value!r})` is not a name: use a '
                         'non-empty string.')
    return value


def check_choice(call, name, value, choices, what):
    """The one of ``choices`` that ``value`` is (``what`` names a choice).

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
    use = f"use one of {', '.join(map(repr, choices))}."
    types = dict.fromkeys(
        'None' if c is None else type(c).__name__ for c in choices)
    if type(plain) not in {type(c) for c in choices}:
        raise TypeError(f"{_bad(call, name, value)} is not a "
                        f"{' or '.join(types)}: {use}")
    raise ValueError(f'{_bad(call, name, value)} is not {what}: {use}')


def check_modes(call, train, eval):
    """``(train, eval)`` as :class:`Modes`, not both false."""
    train = check_flag(call, 'train', train)
    eval = check_flag(call, 'eval', eval)
    if not (train or eval):
        raise ValueError(
            f'`{call}(train=False, eval=False)` would never fire: enable '
            'training mode, evaluation mode or both.')
    return Modes(train, eval)


def check_one_per_trainer(trainer, extension, why, instead):
    """Raises ``ValueError`` if ``trainer`` has another extension of
    ``extension``'s class."""
    cls = type(extension)
    others = [name for name, entry in
              _chainer.extension_entries(trainer).items()
              if isinstance(entry.extension, cls)
              and entry.extension is not extension]
    if others:
        raise ValueError(
            f'{cls.__name__}: the trainer has another {cls.__name__} '
            f"extension ({', '.join(map(repr, others))}), which would {why}; "
            f'{instead}.')

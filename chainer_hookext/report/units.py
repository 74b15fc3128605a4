"""Units of the printed tables: times as Chainer's ``TimerHook`` spells
them, counts with SI prefixes, bytes with binary ones."""

from chainer_hookext import _checks


#: Largest unit first.
FACTORS = {'sec': 1, 'ms': 10 ** 3, 'us': 10 ** 6, 'ns': 10 ** 9}
UNITS = tuple(FACTORS) + ('auto', 'auto_foreach')


def check_unit(call, unit):
    """Returns ``unit``; raises ``ValueError`` naming ``call`` unless known.

    >>> check_unit('TimerHook.print_report', 'min')
    Traceback (most recent call last):
    ...
    ValueError: `TimerHook.print_report(unit='min')` is not a known unit: \
use one of 'sec', 'ms', 'us', 'ns', 'auto', 'auto_foreach'.
    """
    return _checks.check_choice(call, 'unit', unit, UNITS, 'a known unit')


def choose_unit(seconds):
    """``(factor, unit)``: the largest unit in which ``seconds`` >= 1.

    >>> choose_unit(0.0123)
    (1000, 'ms')
    >>> choose_unit(0)
    (1000000000, 'ns')
    """
    return next(((factor, unit) for unit, factor in FACTORS.items()
                 if seconds * factor >= 1), (FACTORS['ns'], 'ns'))


def formatter(unit, seconds):
    """Formats seconds as Chainer does; ``'auto'``: in the largest's unit.

    >>> fmt = formatter('auto', [0.5, 0.002])
    >>> fmt(0.5), fmt(0.002)
    ('500.00ms', '2.00ms')
    >>> formatter('auto_foreach', [])(0.002)
    '2.00ms'
    """
    if unit == 'auto_foreach':
        def fmt(value):
            factor, name = choose_unit(value)
            return f'{value * factor:3.2f}{name}'
        return fmt
    factor, unit = (choose_unit(max(seconds, default=0)) if unit == 'auto'
                    else (FACTORS[unit], unit))
    return lambda value: f'{value * factor:3.2f}{unit}'


_PREFIXES = ((10 ** 12, 'T'), (10 ** 9, 'G'), (10 ** 6, 'M'), (10 ** 3, 'k'))


def seconds(value):
    """Formats seconds in the unit that suits them.

    >>> seconds(0.0123), seconds(2.5)
    ('12.30ms', '2.50sec')
    """
    return formatter('auto_foreach', ())(value)


def count(value):
    """Formats a count (FLOPs, FLOP/s, bytes) with an SI prefix.

    >>> count(2.5e9), count(1234), count(12)
    ('2.50G', '1.23k', '12')
    """
    return _prefixed(value, _PREFIXES)


_BINARY = ((2 ** 30, 'GiB'), (2 ** 20, 'MiB'), (2 ** 10, 'KiB'))


def nbytes(value):
    """Formats a number of bytes with a binary prefix.

    >>> nbytes(3 * 2 ** 20), nbytes(1536), nbytes(12)
    ('3.00MiB', '1.50KiB', '12B')
    """
    return _prefixed(value, _BINARY, 'B')


def _prefixed(value, prefixes, unit=''):
    for factor, prefix in prefixes:
        if abs(value) >= factor:
            return f'{value / factor:.2f}{prefix}'
    return f'{int(round(value))}{unit}'

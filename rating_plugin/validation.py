"""Input checks shared by the rating formulas.

Each check returns the value it accepted (so callers can write ``x = check_x(x, "field")``)
and raises :class:`~rating_plugin.errors.InvalidInputError` naming the field otherwise. The
common cases (a plain ``int`` or ``float``) take a fast path: these run on every rating update.
"""

from __future__ import annotations

import math
import numbers

from rating_plugin.errors import InvalidInputError

__all__ = [
    "MAX_COUNT",
    "check_count",
    "check_positive",
    "check_positive_int",
    "check_rating",
]

#: Upper bound for counts (experience, recent games, match length): far above anything real,
#: low enough that every arithmetic step on it stays finite.
MAX_COUNT = 10**12


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_rating(value: object, field: str) -> float:
    """Accept a finite real number (``int``, ``float`` or another ``numbers.Real``; not a bool).

    Plain ints and floats come back unchanged; other reals come back as ``float``.
    """
    if type(value) is float or type(value) is int:
        try:
            if math.isfinite(value):
                return value
        except OverflowError:  # an int too large for a float
            pass
        raise InvalidInputError(field, f"must be a finite number, got {_describe(value)}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(field, f"must be a number, got {_describe(value)}")
    try:
        converted = float(value)
    except (OverflowError, ValueError):
        converted = math.inf
    if not math.isfinite(converted):
        raise InvalidInputError(field, f"must be a finite number, got {_describe(value)}")
    return converted


def check_positive(value: object, field: str) -> float:
    """Accept a finite real number greater than zero (a K factor, a divisor)."""
    number = check_rating(value, field)
    if number > 0:
        return number
    raise InvalidInputError(field, f"must be greater than 0, got {_describe(value)}")


def _check_int(value: object, field: str, minimum: int) -> int:
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise InvalidInputError(field, f"must be a whole number, got {_describe(value)}")
        value = int(value)
    if value < minimum:
        raise InvalidInputError(field, f"must be at least {minimum}, got {value}")
    if value > MAX_COUNT:
        raise InvalidInputError(field, f"must be at most {MAX_COUNT}, got {_describe(value)}")
    return value


def check_count(value: object, field: str) -> int:
    """Accept a whole number >= 0 (experience, a number of games), at most :data:`MAX_COUNT`."""
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    return _check_int(value, field, 0)


def check_positive_int(value: object, field: str) -> int:
    """Accept a whole number >= 1 (a match length), at most :data:`MAX_COUNT`."""
    if type(value) is int and 1 <= value <= MAX_COUNT:
        return value
    return _check_int(value, field, 1)

"""Rounding half away from zero, the way the Table42 reference (Go's ``math.Round``) rounds.

Python's built-in rounding function rounds exact halves to the nearest even integer
(2.5 becomes 2), which would give different rating changes than the reference.
"""

from __future__ import annotations

import math

__all__ = ["round_half_away"]


def round_half_away(x: float) -> int:
    """Round ``x`` to the nearest integer, exact halves away from zero.

    Needs a finite number (int or float); promises the same result as Go's ``math.Round``:
    ``0.5 -> 1``, ``2.5 -> 3``, ``-0.5 -> -1``, ``-2.5 -> -3``, and ``0.49999999999999994 -> 0``
    (the naive ``floor(x + 0.5)`` gets that last one wrong, because ``x + 0.5`` rounds up to 1.0).
    Raises ``ValueError`` for NaN or an infinity.
    """
    try:
        whole = math.trunc(x)
    except (OverflowError, ValueError):
        raise ValueError(f"x: must be a finite number, got {x!r}") from None
    # x - whole is exact for floats (it only drops the integer bits), so the comparison with
    # 0.5 is exact too.
    fraction = x - whole
    if fraction >= 0.5:
        return whole + 1
    if fraction <= -0.5:
        return whole - 1
    return whole

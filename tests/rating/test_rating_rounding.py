"""round_half_away: half away from zero, like Go's math.Round (never Python's round())."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rating_plugin import round_half_away


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.5, 1),
        (1.5, 2),
        (2.5, 3),
        (3.5, 4),
        (-0.5, -1),
        (-1.5, -2),
        (-2.5, -3),
        (-3.5, -4),
        (0.49999999999999994, 0),  # floor(x + 0.5) would give 1
        (-0.49999999999999994, 0),
        (2.4999999999999996, 2),
        (0.5000000000000001, 1),
        (4503599627370495.5, 4503599627370496),  # the largest float with a .5
        (-4503599627370495.5, -4503599627370496),
        (0.0, 0),
        (-0.0, 0),
        (0.4, 0),
        (-0.4, 0),
        (0.6, 1),
        (-0.6, -1),
        (7, 7),
        (-7, -7),
        (1e16, 10**16),
    ],
)
def test_round_half_away(x: float, expected: int) -> None:
    result = round_half_away(x)
    assert result == expected
    assert type(result) is int


def test_differs_from_builtin_round_on_even_halves() -> None:
    assert [round_half_away(x) for x in (0.5, 2.5, -2.5)] == [1, 3, -3]
    assert [round(x) for x in (0.5, 2.5, -2.5)] == [0, 2, -2]


@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf])
def test_non_finite_is_a_value_error(x: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        round_half_away(x)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_matches_exact_decimal_rounding(x: float) -> None:
    with localcontext() as context:
        context.prec = 400  # enough digits for any float
        exact = Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    assert round_half_away(x) == int(exact)
    assert round_half_away(-x) == -round_half_away(x)

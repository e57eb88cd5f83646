"""Bad input raises InvalidInputError (a RatingError, a ValueError) naming the field."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any, cast

import pytest

from rating_plugin import elo, fibs, stakes, table42
from rating_plugin.errors import InvalidInputError, RatingError

BAD_RATINGS = [math.nan, math.inf, -math.inf, "1500", None, True, 10**400, Decimal(1500), [1]]
BAD_CUBES = [0, 3, 6, 128, -2, 2.0, True, "2", None]
BAD_K_WHOLE = [0, -32, 1.5, 32.0, True, "32", math.nan]
BAD_K_REAL = [0, -1, 0.0, -0.5, math.nan, math.inf, True, "20", None]
BAD_LENGTHS = [0, -1, 1.5, 5.0, True, "5", None, 10**13]
BAD_COUNTS = [-1, -100, 1.5, True, "10", None, math.nan, 10**13]
BAD_SCORES = [0.25, 2, -1, 0.51, True, False, "1", None, math.nan]


def cases() -> list[tuple[Callable[[Any], object], str, object]]:
    table: list[tuple[Callable[[Any], object], str, list[object]]] = [
        (lambda v: table42.change(v, 1500), "winner", BAD_RATINGS),
        (lambda v: table42.change(1500, v), "loser", BAD_RATINGS),
        (lambda v: table42.change(1500, 1500, cube=v), "cube", BAD_CUBES),
        (lambda v: table42.change(1500, 1500, cube=v, version="pre-1.0.5"), "cube", BAD_CUBES),
        (lambda v: table42.change(1500, 1500, winner_k=v), "winner_k", BAD_K_WHOLE),
        (lambda v: table42.change(1500, 1500, loser_k=v), "loser_k", BAD_K_WHOLE),
        (lambda v: table42.change(1500, 1500, divisor=v), "divisor", BAD_K_REAL[:-1]),
        (lambda v: table42.change(1500, 1500, version=v), "version", ["1.3.2", "", None, 1]),
        (lambda v: table42.expected_score(v, 1500), "player", BAD_RATINGS),
        (lambda v: table42.expected_score(1500, v), "opponent", BAD_RATINGS),
        (lambda v: table42.expected_score(1500, 1500, v), "divisor", BAD_K_REAL),
        (table42.cube_coefficient, "cube", BAD_CUBES),
        (table42.k_factor, "recent_ranked_games", BAD_COUNTS),
        (lambda v: table42.k_factor(60, version=v), "version", ["2.0", None]),
        (lambda v: fibs.change(v, 1500, **FIBS), "winner", BAD_RATINGS),
        (lambda v: fibs.change(1500, v, **FIBS), "loser", BAD_RATINGS),
        (
            lambda v: fibs.change(1500, 1500, **{**FIBS, "match_length": v}),
            "match_length",
            BAD_LENGTHS,
        ),
        (
            lambda v: fibs.change(1500, 1500, **{**FIBS, "winner_experience": v}),
            "winner_experience",
            BAD_COUNTS,
        ),
        (
            lambda v: fibs.change(1500, 1500, **{**FIBS, "loser_experience": v}),
            "loser_experience",
            BAD_COUNTS,
        ),
        (lambda v: fibs.win_probability(v, 1500, 1), "a", BAD_RATINGS),
        (lambda v: fibs.win_probability(1500, v, 1), "b", BAD_RATINGS),
        (lambda v: fibs.win_probability(1500, 1500, v), "match_length", BAD_LENGTHS),
        (fibs.experience_multiplier, "experience", BAD_COUNTS),
        (fibs.is_new_player, "experience", BAD_COUNTS),
        (lambda v: elo.update(v, 1500, 1, 20), "rating", BAD_RATINGS),
        (lambda v: elo.update(1500, v, 1, 20), "opponent", BAD_RATINGS),
        (lambda v: elo.update(1500, 1500, v, 20), "score", BAD_SCORES),
        (lambda v: elo.update(1500, 1500, 1, v), "k", BAD_K_REAL),
        (
            lambda v: elo.update(1500, 1500, 1, 20, max_difference=v),
            "max_difference",
            BAD_K_REAL[:-1],
        ),
        (lambda v: elo.expected_score(v, 1500), "rating", BAD_RATINGS),
        (lambda v: elo.fide_k_factor(1500, rated_games=v), "rated_games", BAD_COUNTS),
        (lambda v: elo.fide_update(v, 1500, 1, rated_games=40), "rating", BAD_RATINGS),
        (lambda v: stakes.table42_stakes(1500, 1500, cube=v), "cube", BAD_CUBES),
        (lambda v: stakes.table42_stakes(1500, 1500, k=v), "winner_k", BAD_K_WHOLE),
        (
            lambda v: stakes.fibs_stakes(
                1500, 1500, match_length=v, experience=0, opponent_experience=0
            ),
            "match_length",
            BAD_LENGTHS,
        ),
        (lambda v: stakes.elo_stakes(v, 1500, k=20), "rating", BAD_RATINGS),
        (lambda v: stakes.elo_stakes(1500, 1500, k=v), "k", BAD_K_REAL),
    ]
    return [(call, field, value) for call, field, values in table for value in values]


FIBS: dict[str, int] = {"match_length": 1, "winner_experience": 0, "loser_experience": 0}


@pytest.mark.parametrize(
    ("call", "field", "value"),
    [pytest.param(*case, id=f"{case[1]}={case[2]!r:.20}") for case in cases()],
)
def test_bad_input_names_the_field(
    call: Callable[[Any], object], field: str, value: object
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        call(value)
    error = caught.value
    assert isinstance(error, RatingError)
    assert isinstance(error, ValueError)
    assert error.field == field
    assert str(error).startswith(f"{field}: ")
    assert error.code == "invalid_input"


def test_error_messages_read_well() -> None:
    with pytest.raises(ValueError, match=r"^cube: must be one of 1, 2, 4, 8, 16, 32, 64, got 3$"):
        table42.change(1500, 1500, cube=3)
    with pytest.raises(ValueError, match=r"^winner: must be a finite number, got nan$"):
        table42.change(math.nan, 1500)
    with pytest.raises(ValueError, match=r"^match_length: must be at least 1, got 0$"):
        fibs.win_probability(1500, 1500, 0)
    with pytest.raises(ValueError, match=r"^score: must be 1 \(win\), 0.5 \(draw\) or 0"):
        elo.update(1500, 1500, 0.25, 20)


def test_other_real_numbers_are_accepted() -> None:
    assert table42.change(cast(Any, Fraction(3000, 2)), 1500.0) == table42.change(1500, 1500)
    assert elo.update(1500, 1500, 0.5, cast(Any, Fraction(20))).change == 0.0
    assert elo.update(1500, 1500, 1.0, 20) == elo.update(1500, 1500, 1, 20)


def test_import_does_not_import_redis_until_the_store_is_used() -> None:
    code = (
        "import sys, rating_plugin\n"
        "assert 'redis' not in sys.modules, sorted(sys.modules)\n"
        "from rating_plugin import store\n"
        "assert rating_plugin.RatingStore is store.RatingStore\n"
        "assert 'redis' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def test_store_names_resolve_lazily() -> None:
    import rating_plugin

    with pytest.raises(AttributeError):
        rating_plugin.NoSuchThing  # noqa: B018

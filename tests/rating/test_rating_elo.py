"""Classic Elo pinned to docs/rating-engine.md (Classic Elo examples), with the K presets and
FIDE's rules."""

from __future__ import annotations

import pytest

from rating_plugin import elo
from rating_plugin.elo import expected_score, fide_k_factor, fide_update, update


def test_worked_example() -> None:
    # 1500 beats 1600 with K = 32: E = 0.3599, +20.48, new rating 1520.48.
    result = update(1500, 1600, 1, 32)
    assert f"{result.expected_score:.4f}" == "0.3599"
    assert f"{result.change:.2f}" == "20.48"
    assert f"{result.new_rating:.2f}" == "1520.48"
    assert result.new_rating == result.rating + result.change
    assert (result.score, result.k) == (1.0, 32)
    assert expected_score(1500, 1600) == result.expected_score


@pytest.mark.parametrize(
    ("rating", "opponent", "score", "k", "change", "new_rating"),
    [
        (1500, 1600, 1, 32, "20.48", "1520.48"),
        (1500, 1600, 0.5, 32, "4.48", "1504.48"),
        (1500, 1600, 0, 32, "-11.52", "1488.48"),
        (1600, 1500, 1, 32, "11.52", "1611.52"),
        (1600, 1500, 0.5, 32, "-4.48", "1595.52"),
        (1600, 1500, 0, 32, "-20.48", "1579.52"),
        (1500, 1500, 1, 20, "10.00", "1510.00"),
        (1500, 1500, 0.5, 20, "0.00", "1500.00"),
        (2000, 1600, 0, 10, "-9.09", "1990.91"),
    ],
)
def test_results(
    rating: float, opponent: float, score: float, k: float, change: str, new_rating: str
) -> None:
    result = update(rating, opponent, score, k)
    assert f"{result.change:.2f}" == change
    assert f"{result.new_rating:.2f}" == new_rating


def test_draw_moves_the_lower_rated_player_up() -> None:
    lower = update(1500, 1700, 0.5, 20)
    higher = update(1700, 1500, 0.5, 20)
    assert lower.change > 0 > higher.change
    assert lower.change == pytest.approx(-higher.change)


def test_presets() -> None:
    assert elo.K_PRESETS == {"new": 40, "standard": 20, "master": 10, "amateur": 32}
    assert elo.DIVISOR == 400


# FIDE: 40 until 30 rated games and for juniors under 2300; 10 for good once 2400 was
# reached; 20 otherwise.
@pytest.mark.parametrize(
    ("rating", "games", "junior", "reached_2400", "k"),
    [
        (1500, 0, False, False, 40),
        (2100, 29, False, False, 40),
        (2500, 29, False, False, 40),
        (1500, 30, False, False, 20),
        (2399, 200, False, False, 20),
        (2400, 200, False, False, 10),
        (2650, 200, False, False, 10),
        (2380, 200, False, True, 10),  # dropped back below 2400: stays at 10
        (2299, 100, True, False, 40),
        (2300, 100, True, False, 20),
        (2450, 100, True, False, 10),
    ],
)
def test_fide_k_factor(rating: float, games: int, junior: bool, reached_2400: bool, k: int) -> None:
    assert (
        fide_k_factor(rating, rated_games=games, is_junior=junior, has_reached_2400=reached_2400)
        == k
    )


def test_fide_caps_the_difference_at_400() -> None:
    capped = fide_update(2000, 2600, 1, rated_games=100)
    assert capped.k == 20
    assert capped.expected_score == pytest.approx(1 / 11)  # as if 400 apart
    assert f"{capped.change:.2f}" == "18.18"
    assert capped.expected_score == update(2000, 2400, 1, 20).expected_score
    uncapped = update(2000, 2600, 1, 20)
    assert uncapped.change > capped.change
    favourite = fide_update(2600, 2000, 0, rated_games=100)
    assert favourite.k == 10
    assert favourite.expected_score == pytest.approx(10 / 11)
    assert f"{favourite.change:.2f}" == "-9.09"
    # Within 400 points the cap changes nothing.
    assert fide_update(2000, 2350, 1, rated_games=100) == update(2000, 2350, 1, 20)


def test_update_is_frozen_and_serialisable() -> None:
    result = update(1500, 1500, 1, 20)
    with pytest.raises(AttributeError):
        result.change = 0.0  # type: ignore[misc]
    assert result.to_dict() == {
        "rating": 1500,
        "expected_score": 0.5,
        "score": 1.0,
        "k": 20,
        "change": 10.0,
        "new_rating": 1510.0,
    }

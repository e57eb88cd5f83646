"""FIBS rating pinned to every number of docs/rating-engine.md, FIBS rating and its examples."""

from __future__ import annotations

import math

import pytest

from rating_plugin import fibs
from rating_plugin.fibs import change, experience_multiplier, win_probability


def test_constants() -> None:
    assert fibs.START_RATING == 1500.0
    assert isinstance(fibs.START_RATING, float)
    assert fibs.NEW_PLAYER_EXPERIENCE == 10


# Win chance of the stronger player, whole percent.
@pytest.mark.parametrize(
    ("difference", "length", "percent"),
    [
        (100, 1, "53"),
        (100, 3, "55"),
        (100, 7, "58"),
        (200, 1, "56"),
        (200, 3, "60"),
        (200, 7, "65"),
        (400, 1, "61"),
        (400, 3, "69"),
        (400, 7, "77"),
    ],
)
def test_win_probability_table(difference: int, length: int, percent: str) -> None:
    stronger = win_probability(1500 + difference, 1500, length)
    assert f"{stronger * 100:.0f}" == percent
    assert win_probability(1500, 1500 + difference, length) == pytest.approx(1 - stronger)


def test_win_probability_formula() -> None:
    a, b, n = 1623.25, 1480.5, 5
    assert win_probability(a, b, n) == 1 / (1 + 10 ** (-(a - b) * math.sqrt(n) / 2000))
    assert win_probability(1500, 1500, 11) == 0.5


# Equal players, both established: match to 1 -> +2, match to 9 -> +6.
@pytest.mark.parametrize(("length", "points"), [(1, 2.0), (9, 6.0), (4, 4.0), (25, 10.0)])
def test_equal_players(length: int, points: float) -> None:
    result = change(1500, 1500, match_length=length, winner_experience=400, loser_experience=900)
    assert result.winner == pytest.approx(points)
    assert result.loser == pytest.approx(-points)
    assert result.points == pytest.approx(points)
    assert result.winner_probability == 0.5


def test_new_player_example() -> None:
    # Equal ratings, 1-point match, winner's experience 150 -> multiplier 3.5 -> +7.00.
    result = change(1500, 1500, match_length=1, winner_experience=150, loser_experience=400)
    assert result.winner_multiplier == 3.5
    assert f"{result.winner:.2f}" == "7.00"
    assert (result.loser_multiplier, f"{result.loser:.2f}") == (1.0, "-2.00")


@pytest.mark.parametrize(
    ("experience", "multiplier"),
    [
        (0, 5.0),
        (1, 4.99),
        (50, 4.5),
        (100, 4.0),
        (150, 3.5),
        (200, 3.0),
        (300, 2.0),
        (399, 1.01),
        (400, 1.0),
        (401, 1.0),
        (10_000, 1.0),
    ],
)
def test_experience_multiplier(experience: int, multiplier: float) -> None:
    assert experience_multiplier(experience) == pytest.approx(multiplier)


@pytest.mark.parametrize(
    ("experience", "is_new"), [(0, True), (9, True), (10, False), (400, False)]
)
def test_new_player_label(experience: int, is_new: bool) -> None:
    assert fibs.is_new_player(experience) is is_new


def test_each_side_uses_its_own_multiplier() -> None:
    result = change(1600, 1500, match_length=5, winner_experience=0, loser_experience=250)
    points = 4 * math.sqrt(5) * (1 - win_probability(1600, 1500, 5))
    assert result.points == pytest.approx(points)
    assert fibs.points_at_stake(1600, 1500, 5) == pytest.approx(points)
    assert result.winner == pytest.approx(points * 5)
    assert result.loser == pytest.approx(-points * 2.5)
    assert (result.winner_multiplier, result.loser_multiplier) == (5.0, 2.5)


def test_change_is_frozen_and_serialisable() -> None:
    result = change(1500, 1500, match_length=1, winner_experience=400, loser_experience=400)
    with pytest.raises(AttributeError):
        result.winner = 0.0  # type: ignore[misc]
    assert result.to_dict() == {
        "winner": 2.0,
        "loser": -2.0,
        "winner_probability": 0.5,
        "winner_multiplier": 1.0,
        "loser_multiplier": 1.0,
        "points": 2.0,
    }

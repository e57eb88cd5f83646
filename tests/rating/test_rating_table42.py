"""Table42 Elo pinned to every number of docs/rating-engine.md, Table42 Elo examples."""

from __future__ import annotations

import math

import pytest

from rating_plugin import round_half_away, table42
from rating_plugin.table42 import CubeRule, change, cube_coefficient, expected_score, k_factor


def test_constants() -> None:
    assert table42.START_RATING == 1500
    assert table42.HEAVY_WEEK_GAMES == 50
    assert table42.WINDOW_SECONDS == 7 * 24 * 3600 == 604_800
    assert table42.MAX_CUBE == 64
    assert table42.CUBE_VALUES == (1, 2, 4, 8, 16, 32, 64)
    assert table42.DIVISOR == 1200
    assert table42.DEFAULT_K == 32
    assert table42.HEAVY_WEEK_K == 16
    assert table42.CURRENT_VERSION.name == "1.3.1"


# Favourite's win chance at D = 1200.
@pytest.mark.parametrize(
    ("difference", "percent"),
    [
        (0, "50.0"),
        (50, "52.4"),
        (100, "54.8"),
        (150, "57.1"),
        (200, "59.5"),
        (300, "64.0"),
        (400, "68.3"),
        (500, "72.3"),
    ],
)
@pytest.mark.parametrize("base", [1500, 900, 2100])
def test_favourite_win_chance(difference: int, percent: str, base: int) -> None:
    chance = expected_score(base + difference, base)
    assert f"{chance * 100:.1f}" == percent
    assert expected_score(base, base + difference) == pytest.approx(1 - chance, abs=1e-15)


# K = 32, cube 1: (favourite wins: +w / -l), (underdog wins: +w / -l).
@pytest.mark.parametrize(
    ("difference", "favourite_wins", "underdog_wins"),
    [
        (0, (16, -16), (16, -16)),
        (100, (14, -14), (18, -18)),
        (200, (13, -13), (19, -19)),
        (300, (12, -12), (20, -20)),
        (400, (10, -10), (22, -22)),
    ],
)
@pytest.mark.parametrize("base", [1500, 1000])
def test_changes_by_rating_difference(
    difference: int,
    favourite_wins: tuple[int, int],
    underdog_wins: tuple[int, int],
    base: int,
) -> None:
    favourite, underdog = base + difference, base
    result = change(favourite, underdog)
    assert (result.winner, result.loser) == favourite_wins
    result = change(underdog, favourite)
    assert (result.winner, result.loser) == underdog_wins


# The favourite's gain on a win and loss on a defeat, at K = 32 and K = 16 (both players).
@pytest.mark.parametrize(
    ("difference", "k", "win", "loss"),
    [
        (0, 32, 16, -16),
        (150, 32, 14, -18),
        (300, 32, 12, -20),
        (0, 16, 8, -8),
        (150, 16, 7, -9),
        (300, 16, 6, -10),
    ],
)
def test_changes_by_k(difference: int, k: int, win: int, loss: int) -> None:
    favourite, underdog = 1500 + difference, 1500
    assert change(favourite, underdog, winner_k=k, loser_k=k).winner == win
    assert change(underdog, favourite, winner_k=k, loser_k=k).loser == loss


# A 300-point favourite under each divisor: win chance, points for a win and for a loss.
@pytest.mark.parametrize(
    ("version", "divisor", "percent", "win", "loss"),
    [
        ("1.0.5", 400, "84.9", 5, -27),
        ("1.2.0", 800, "70.3", 9, -23),
        ("1.3.1", 1200, "64.0", 12, -20),
    ],
)
def test_divisors(version: str, divisor: int, percent: str, win: int, loss: int) -> None:
    assert table42.VERSIONS[version].divisor == divisor
    assert f"{expected_score(1800, 1500, divisor) * 100:.1f}" == percent
    assert change(1800, 1500, version=version).winner == win
    assert change(1500, 1800, version=version).loser == loss
    assert change(1800, 1500, divisor=divisor).winner == win
    assert change(1500, 1800, divisor=divisor).loser == loss


# Cube: coefficient (2 decimals), two 1500 players at K = 32 and K = 16.
@pytest.mark.parametrize(
    ("cube", "coefficient", "at_k32", "at_k16"),
    [
        (1, "1.00", 16, 8),
        (2, "1.17", 19, 9),
        (4, "1.33", 21, 11),
        (8, "1.50", 24, 12),
        (16, "1.67", 27, 13),
        (32, "1.83", 29, 15),
        (64, "2.00", 32, 16),
    ],
)
def test_cube(cube: int, coefficient: str, at_k32: int, at_k16: int) -> None:
    assert f"{cube_coefficient(cube):.2f}" == coefficient
    assert cube_coefficient(cube) == 1 + math.log2(cube) / 6
    result = change(1500, 1500, cube=cube)
    assert (result.winner, result.loser) == (at_k32, -at_k32)
    assert result.coefficient == cube_coefficient(cube)
    result = change(1500, 1500, cube=cube, winner_k=16, loser_k=16)
    assert (result.winner, result.loser) == (at_k16, -at_k16)


def test_mixed_k() -> None:
    # Equal ratings; you have K = 16 (60 games this week), the opponent K = 32 (10 games).
    you, opponent = k_factor(60), k_factor(10)
    assert (you, opponent) == (16, 32)
    you_win = change(1500, 1500, winner_k=you, loser_k=opponent)
    assert (you_win.winner, you_win.loser) == (8, -16)
    opponent_wins = change(1500, 1500, winner_k=opponent, loser_k=you)
    assert (opponent_wins.winner, opponent_wins.loser) == (16, -8)
    assert (you_win.winner_k, you_win.loser_k) == (16, 32)


@pytest.mark.parametrize(
    ("games", "k"),
    [(0, 32), (10, 32), (49, 32), (50, 16), (60, 16), (300, 16)],
)
def test_k_factor(games: int, k: int) -> None:
    assert k_factor(games) == k
    assert k_factor(games, version="1.3.1") == k


@pytest.mark.parametrize("version", ["1.2.0", "1.0.5", "pre-1.0.5"])
def test_no_heavy_week_rule_before_1_3_1(version: str) -> None:
    assert k_factor(300, version=version) == 32


@pytest.mark.parametrize(
    ("name", "divisor", "rule", "heavy_week"),
    [
        ("1.3.1", 1200, CubeRule.COEFFICIENT, True),
        ("1.2.0", 800, CubeRule.COEFFICIENT, False),
        ("1.0.5", 400, CubeRule.COEFFICIENT, False),
        ("pre-1.0.5", 400, CubeRule.MULTIPLY, False),
    ],
)
def test_version_presets(name: str, divisor: int, rule: CubeRule, heavy_week: bool) -> None:
    preset = table42.get_version(name)
    assert (preset.name, preset.divisor, preset.cube_rule) == (name, divisor, rule)
    assert preset.has_heavy_week_k is heavy_week
    assert table42.get_version(preset) is preset


@pytest.mark.parametrize(
    ("cube", "points"), [(1, 16), (2, 32), (4, 64), (8, 128), (16, 256), (32, 512), (64, 1024)]
)
def test_before_1_0_5_the_cube_multiplies(cube: int, points: int) -> None:
    result = change(1500, 1500, cube=cube, version="pre-1.0.5")
    assert (result.winner, result.loser, result.coefficient) == (points, -points, cube)


def test_before_1_0_5_at_cube_1_equals_1_0_5() -> None:
    assert change(1800, 1500, version="pre-1.0.5") == change(1800, 1500, version="1.0.5")


def test_version_and_divisor_override() -> None:
    # The divisor overrides the preset's; the cube rule stays the preset's.
    result = change(1800, 1500, cube=2, divisor=400, version="pre-1.0.5")
    assert result.coefficient == 2.0
    assert result.winner == round_half_away(32 * (1 - expected_score(1800, 1500, 400)) * 2)


# Exact halves are rounded away from zero: K * 0.5 with an odd K.
@pytest.mark.parametrize(("k", "winner", "loser"), [(1, 1, -1), (3, 2, -2), (5, 3, -3)])
def test_exact_halves_round_away_from_zero(k: int, winner: int, loser: int) -> None:
    result = change(1500, 1500, winner_k=k, loser_k=k)
    assert (result.winner, result.loser) == (winner, loser)


@pytest.mark.parametrize("version", list(table42.VERSIONS))
@pytest.mark.parametrize("cube", [1, 2, 8, 64])
@pytest.mark.parametrize(("winner", "loser"), [(1500, 1500), (1523, 1981), (2417, 1288)])
@pytest.mark.parametrize(("winner_k", "loser_k"), [(32, 32), (16, 32), (32, 16)])
def test_reference_order_of_operations(
    version: str, cube: int, winner: int, loser: int, winner_k: int, loser_k: int
) -> None:
    # The Go reference, operation for operation.
    preset = table42.VERSIONS[version]
    c = cube_coefficient(cube) if preset.cube_rule is CubeRule.COEFFICIENT else float(cube)
    expected_winner = 1.0 / (1.0 + math.pow(10, (loser - winner) / preset.divisor))
    expected_loser = 1 - expected_winner
    result = change(winner, loser, cube=cube, winner_k=winner_k, loser_k=loser_k, version=version)
    assert result.winner == round_half_away(winner_k * (1 - expected_winner) * c)
    assert result.loser == round_half_away(loser_k * (0 - expected_loser) * c)
    assert result.winner_expected == expected_winner
    assert result.loser_expected == expected_loser


def test_extreme_ratings_stay_finite() -> None:
    result = change(0, 10**6, version="1.0.5")
    assert (result.winner, result.loser, result.winner_expected) == (32, -32, 0.0)
    result = change(10**6, 0)
    assert (result.winner, result.loser, result.winner_expected) == (0, 0, 1.0)


def test_change_is_frozen_and_serialisable() -> None:
    result = change(1500, 1800)
    with pytest.raises(AttributeError):
        result.winner = 0  # type: ignore[misc]
    assert result.to_dict() == {
        "winner": 20,
        "loser": -20,
        "winner_expected": result.winner_expected,
        "loser_expected": result.loser_expected,
        "coefficient": 1.0,
        "winner_k": 32,
        "loser_k": 32,
    }

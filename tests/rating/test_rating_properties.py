"""Invariants of the three systems, checked with hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rating_plugin import elo, fibs, table42
from rating_plugin.stakes import table42_stakes

ratings = st.integers(min_value=0, max_value=4000)
real_ratings = st.floats(min_value=-1000, max_value=5000, allow_nan=False)
cubes = st.sampled_from(table42.CUBE_VALUES)
ks = st.sampled_from([16, 32]) | st.integers(min_value=1, max_value=100)
versions = st.sampled_from(list(table42.VERSIONS))
lengths = st.integers(min_value=1, max_value=25)
experiences = st.integers(min_value=0, max_value=2000)
scores = st.sampled_from([0, 0.5, 1])

EXAMPLES = settings(max_examples=150, deadline=None)


@EXAMPLES
@given(ratings, ratings, cubes, ks, ks, versions)
def test_table42_winner_never_loses(
    winner: int, loser: int, cube: int, winner_k: int, loser_k: int, version: str
) -> None:
    result = table42.change(
        winner, loser, cube=cube, winner_k=winner_k, loser_k=loser_k, version=version
    )
    assert result.winner >= 0 >= result.loser
    assert result.winner_expected + result.loser_expected == pytest.approx(1)


@EXAMPLES
@given(ratings, ratings, cubes, ks, versions)
def test_table42_equal_k_is_zero_sum(
    winner: int, loser: int, cube: int, k: int, version: str
) -> None:
    result = table42.change(winner, loser, cube=cube, winner_k=k, loser_k=k, version=version)
    assert result.winner + result.loser == 0


@EXAMPLES
@given(ratings, ratings, ratings, cubes, ks, versions)
def test_table42_beating_a_stronger_opponent_is_worth_more(
    player: int, a: int, b: int, cube: int, k: int, version: str
) -> None:
    weaker, stronger = sorted((a, b))
    beat_stronger = table42.change(player, stronger, cube=cube, winner_k=k, version=version)
    beat_weaker = table42.change(player, weaker, cube=cube, winner_k=k, version=version)
    assert beat_stronger.winner >= beat_weaker.winner


@EXAMPLES
@given(ratings, ratings, cubes, ks, ks)
def test_table42_stakes_match_the_settlement(
    rating: int, opponent: int, cube: int, k: int, opponent_k: int
) -> None:
    preview = table42_stakes(rating, opponent, cube=cube, k=k, opponent_k=opponent_k)
    win = table42.change(rating, opponent, cube=cube, winner_k=k, loser_k=opponent_k)
    assert (preview.player.win, preview.opponent.loss) == (win.winner, win.loser)


@given(cubes)
def test_cube_coefficient_between_1_and_2(cube: int) -> None:
    assert 1.0 <= table42.cube_coefficient(cube) <= 2.0


@EXAMPLES
@given(st.integers(min_value=0, max_value=10**9))
def test_fibs_multiplier_between_1_and_5(experience: int) -> None:
    assert 1.0 <= fibs.experience_multiplier(experience) <= 5.0


@EXAMPLES
@given(real_ratings, real_ratings, lengths, experiences, experiences)
def test_fibs_winner_never_loses(
    winner: float, loser: float, length: int, winner_exp: int, loser_exp: int
) -> None:
    result = fibs.change(
        winner, loser, match_length=length, winner_experience=winner_exp, loser_experience=loser_exp
    )
    assert result.winner >= 0 >= result.loser
    assert 1.0 <= result.winner_multiplier <= 5.0
    assert 1.0 <= result.loser_multiplier <= 5.0


@EXAMPLES
@given(real_ratings, real_ratings, lengths, experiences)
def test_fibs_equal_multipliers_are_zero_sum(
    winner: float, loser: float, length: int, experience: int
) -> None:
    result = fibs.change(
        winner,
        loser,
        match_length=length,
        winner_experience=experience,
        loser_experience=experience,
    )
    assert result.winner == -result.loser


@EXAMPLES
@given(real_ratings, real_ratings, real_ratings, lengths, experiences)
def test_fibs_beating_a_stronger_opponent_is_worth_more(
    player: float, a: float, b: float, length: int, experience: int
) -> None:
    weaker, stronger = sorted((a, b))
    common = {"match_length": length, "winner_experience": experience, "loser_experience": 0}
    assert (
        fibs.change(player, stronger, **common).winner
        >= fibs.change(player, weaker, **common).winner
    )


@EXAMPLES
@given(real_ratings, real_ratings, st.floats(min_value=1, max_value=64))
def test_elo_win_never_loses_and_loss_never_gains(rating: float, opponent: float, k: float) -> None:
    assert elo.update(rating, opponent, 1, k).change >= 0
    assert elo.update(rating, opponent, 0, k).change <= 0


@EXAMPLES
@given(real_ratings, real_ratings, scores, st.floats(min_value=1, max_value=64))
def test_elo_equal_k_is_zero_sum(rating: float, opponent: float, score: float, k: float) -> None:
    mine = elo.update(rating, opponent, score, k)
    theirs = elo.update(opponent, rating, 1 - score, k)
    assert mine.change + theirs.change == pytest.approx(0, abs=1e-9)
    assert mine.new_rating == rating + mine.change


@EXAMPLES
@given(real_ratings, real_ratings, real_ratings, st.floats(min_value=1, max_value=64))
def test_elo_beating_a_stronger_opponent_is_worth_more(
    player: float, a: float, b: float, k: float
) -> None:
    weaker, stronger = sorted((a, b))
    assert elo.update(player, stronger, 1, k).change >= elo.update(player, weaker, 1, k).change

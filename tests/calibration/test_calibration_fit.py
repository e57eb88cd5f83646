"""The divisor fit, the bins, the scores and the warnings (pure, on synthetic logs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rating_plugin.analysis.calibration import (
    Calibrator,
    Tally,
    fit_divisor,
    make_bins,
    report,
    scores,
)
from rating_plugin.analysis.gamelog import GameRecord
from rating_plugin.analysis.synth import SynthConfig, generate


def calibrate(config: SynthConfig, **options: int) -> Calibrator:
    calibrator = Calibrator(config.ladder, **options)
    for record in generate(config):
        calibrator.add(record)
    return calibrator


@pytest.mark.parametrize("divisor", [400, 800, 1200])
def test_the_fit_recovers_the_true_divisor_within_its_interval(divisor: int) -> None:
    # Ratings are the true skills (perfectly settled): the fit must find the curve's divisor.
    config = SynthConfig(games=20_000, players=200, divisor=divisor, skill_sd=200,
                         ratings="skill", seed=3)
    result = report(calibrate(config))
    fit = result.fit
    assert fit.games == 20_000
    assert fit.low < divisor < fit.high, fit
    assert fit.low < fit.divisor < fit.high
    assert (fit.high - fit.low) < 0.25 * divisor  # tight enough to tell 400, 800, 1200 apart
    assert result.warnings == ()
    # The fitted divisor scores at least as well as any other, the true one included.
    assert result.fitted.log_loss <= result.current.log_loss + 1e-12


def test_the_fibs_scale_is_fitted_on_difference_times_root_n() -> None:
    config = SynthConfig(games=20_000, players=200, ladder="fibs", divisor=2000, skill_sd=250,
                         ratings="skill", seed=3)
    fit = report(calibrate(config)).fit
    assert fit.low < 2000 < fit.high, fit


def test_a_miscalibrated_curve_is_seen_in_the_bins_and_scores() -> None:
    # Games drawn with D = 800 scored against the current 1200: favourites win more often
    # than the curve expects, and the fitted divisor predicts better.
    config = SynthConfig(games=20_000, players=200, divisor=800, skill_sd=200,
                         ratings="skill", seed=3)
    result = report(calibrate(config), current=1200)
    assert not result.fit.contains(1200)
    busy = [b for b in result.bins if b.games >= 500 and b.low >= 100]
    assert busy and all(b.actual > b.expected for b in busy)
    assert result.fitted.log_loss < result.current.log_loss
    assert result.fitted.brier < result.current.brier


def test_too_few_games_warn_and_widen_the_interval() -> None:
    config = SynthConfig(games=150, players=40, divisor=1200, ratings="skill", seed=2)
    result = report(calibrate(config))
    assert any("only 150 games" in w for w in result.warnings)
    assert any("interval" in w and "wide" in w for w in result.warnings)


def test_ratings_still_settling_warn_and_min_games_leaves_them_out() -> None:
    # Replayed ratings over few games per player: most games involve a newcomer.
    config = SynthConfig(games=2_000, players=400, seed=4)
    result = report(calibrate(config))
    assert any("still settling" in w for w in result.warnings)
    kept = report(calibrate(config, min_games=5))
    assert kept.left_out > 0
    assert kept.games + kept.left_out == 2_000


def game(winner_before: float, loser_before: float, seq: int = 1) -> GameRecord:
    return GameRecord("table42", seq, f"g{seq}", "normal", 1.0e9 + seq, 1, None, "a", "b",
                      winner_before, loser_before)


def test_ratings_that_do_not_predict_results_warn() -> None:
    calibrator = Calibrator(min_games=0, settled_games=0)
    for i in range(2_000):
        calibrator.add(game(1400, 1600, i + 1) if i % 3 else game(1600, 1400, i + 1))
    result = report(calibrator)
    assert math.isinf(result.fit.divisor)
    assert any("do not predict" in w for w in result.warnings)


def test_the_favourite_winning_every_game_cannot_be_fitted() -> None:
    calibrator = Calibrator(settled_games=0)
    for i in range(2_000):
        calibrator.add(game(1600, 1400, i + 1))
    result = report(calibrator)
    assert result.fit.divisor == 0
    assert any("won every game" in w for w in result.warnings)


def test_an_empty_log_says_so() -> None:
    result = report(Calibrator())
    assert result.games == 0
    assert result.warnings == ("no table42 games in the log: nothing to fit",)


def test_bins_count_the_favourite_wins_and_equal_ratings_as_half() -> None:
    xs = np.array([-120.0, 0.0, 30.0, 120.0, 700.0])
    counts = np.array([1.0, 2.0, 3.0, 3.0, 4.0])
    bins = make_bins(xs, counts, current=1200, fitted=1200, width=100, count=3)
    assert [(b.low, b.high, b.games) for b in bins] == [
        (0, 100, 5), (100, 200, 4), (200, math.inf, 4)
    ]
    assert bins[0].actual == pytest.approx((3 + 1) / 5)  # 3 favourite wins + 2 halves
    assert bins[1].actual == pytest.approx(3 / 4)
    assert bins[2].actual == 1.0
    assert bins[1].expected == pytest.approx(1 / (1 + 10 ** (-120 / 1200)))
    assert bins[2].actual_low < 1.0 == bins[2].actual_high  # Wilson: never a zero-width 100%
    assert all(b.is_thin for b in bins)


@pytest.mark.parametrize(
    ("divisor", "log_loss", "brier"),
    [
        (math.inf, math.log(2), 0.25),  # a flat curve is a coin: ln 2 and 1/4
        (1200, -math.log(1 / (1 + 10 ** (-300 / 1200))), (1 - 1 / (1 + 10 ** (-300 / 1200))) ** 2),
    ],
)
def test_scores(divisor: float, log_loss: float, brier: float) -> None:
    result = scores(np.array([300.0]), np.array([5.0]), divisor)
    assert result.log_loss == pytest.approx(log_loss)
    assert result.brier == pytest.approx(brier)


def test_the_tally_keeps_whole_differences_exact_and_rounds_the_rest() -> None:
    tally = Tally(chunk=3)
    for x in (100, 100, -37, 12.34, 12.36, 100):
        tally.add(x)
    xs, counts = tally.arrays()
    assert xs.tolist() == pytest.approx([-37.0, 12.3, 12.4, 100.0])
    assert counts.tolist() == [1, 1, 1, 3]
    assert tally.games == 6


def test_the_fit_on_a_tally_matches_the_fit_on_raw_games() -> None:
    xs = np.array([-200.0, -50.0, 0.0, 50.0, 120.0, 300.0])
    counts = np.array([40.0, 90.0, 50.0, 110.0, 80.0, 70.0])
    fit = fit_divisor(xs, counts)
    # The score (derivative of the log-likelihood in 1/D) is zero at the fitted divisor.
    beta = 1 / fit.divisor
    z = xs * math.log(10)
    assert float(np.dot(counts, z / (1 + np.exp(beta * z)))) == pytest.approx(0, abs=1e-6)
    assert fit.low < fit.divisor < fit.high

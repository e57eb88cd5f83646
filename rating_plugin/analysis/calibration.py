"""Calibration: does the rating curve match what the dice allow? Fit its divisor to the games.

Pure (numpy, no I/O). The curve gives the winner-to-be's chance from the rating difference
``x`` before the game: ``p(x) = 1 / (1 + 10 ** (-x / D))``. On Table42 ``x`` is the rating
difference and ``D`` the divisor (1200 today); on FIBS ``x`` is the difference times
``sqrt(match length)`` and ``D`` the scale (2000). Given settled games (pre-game ratings and
who won), this module

* fits ``D`` by maximum likelihood (Newton's method on ``1/D``, a one-parameter logistic
  regression through the origin) with a 95% likelihood-ratio interval;
* bins the games by the favourite's lead and compares expected and actual win rates, with a
  Wilson 95% interval on the actual rate;
* scores both divisors, the current and the fitted one, by log-loss and Brier score;
* warns when the data cannot support the answer (too few games, a wide interval, ratings
  still settling, ratings that do not predict results).

Memory does not grow with the log: :class:`Tally` keeps one count per distinct difference
(rounded to 0.1 point; Table42 differences are whole numbers and stay exact), so a million
games cost the same as a few thousand. The numbers are the sufficient statistics of the fit,
so nothing is lost but that rounding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from rating_plugin.errors import InvalidInputError
from rating_plugin.logformat import GameRecord, LogRecord
from rating_plugin.rounding import round_half_away

__all__ = [
    "CHI2_95",
    "Bin",
    "Calibrator",
    "Fit",
    "Report",
    "Scores",
    "Tally",
    "fit_divisor",
    "make_bins",
    "report",
    "scores",
]

FloatArray = npt.NDArray[np.float64]

LN10: Final = math.log(10.0)
#: The 95% point of the chi-square distribution with one degree of freedom.
CHI2_95: Final = 3.841458820694124
#: z for a two-sided 95% interval.
Z_95: Final = 1.959963984540054
RESOLUTION: Final = 0.1
#: Fewer games than this: the fit is reported with a warning.
MIN_GAMES: Final = 1000
#: A bin with fewer games is marked as thin.
MIN_BIN_GAMES: Final = 30
#: Earlier games below which a Table42 player's rating is counted as still settling.
SETTLED_GAMES: Final = 20
#: FIBS experience below which a player's rating is counted as still settling (multiplier 1).
SETTLED_EXPERIENCE: Final = 400
#: Share of games with a settling player from which calibrate warns.
SETTLING_WARN_SHARE: Final = 0.2
CURRENT_DIVISORS: Final = {"table42": 1200.0, "fibs": 2000.0}


class Tally:
    """Games counted by rating difference ``x`` (winner minus loser, in curve units), rounded
    to ``resolution`` points. Add games one by one (:meth:`add`) or as arrays
    (:meth:`add_many`); buffered adds are folded in with numpy every ``chunk`` games."""

    def __init__(self, resolution: float = RESOLUTION, *, chunk: int = 65_536) -> None:
        if not resolution > 0:
            raise InvalidInputError("resolution", f"must be above 0, got {resolution!r}")
        self.resolution = resolution
        self._chunk = chunk
        self._buffer: list[float] = []
        self._counts: dict[int, int] = {}
        self.games = 0

    def add(self, x: float) -> None:
        """Count one game whose winner was rated ``x`` above the loser (negative: below)."""
        self._buffer.append(x)
        if len(self._buffer) >= self._chunk:
            self._flush()

    def add_many(self, xs: Iterable[float] | FloatArray) -> None:
        """Count many games at once."""
        self._fold(np.asarray(xs, dtype=np.float64))

    def _flush(self) -> None:
        if self._buffer:
            self._fold(np.asarray(self._buffer, dtype=np.float64))
            self._buffer.clear()

    def _fold(self, xs: FloatArray) -> None:
        if xs.size == 0:
            return
        if not np.all(np.isfinite(xs)):
            raise InvalidInputError("x", "rating differences must be finite")
        keys, counts = np.unique(np.rint(xs / self.resolution).astype(np.int64),
                                 return_counts=True)
        table = self._counts
        for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
            table[key] = table.get(key, 0) + count
        self.games += int(xs.size)

    def arrays(self) -> tuple[FloatArray, FloatArray]:
        """The distinct differences (sorted) and how many games each has."""
        self._flush()
        if not self._counts:
            return np.zeros(0), np.zeros(0)
        keys = np.fromiter(self._counts.keys(), dtype=np.int64, count=len(self._counts))
        counts = np.fromiter(self._counts.values(), dtype=np.float64, count=len(self._counts))
        order = np.argsort(keys)
        return keys[order].astype(np.float64) * self.resolution, counts[order]


# -- the fit ------------------------------------------------------------------------------------


def _log_likelihood(beta: float, z: FloatArray, n: FloatArray) -> float:
    """sum n * log(sigmoid(beta * z)), computed without overflow."""
    return float(-np.dot(n, np.logaddexp(0.0, -beta * z)))


@dataclass(frozen=True, slots=True)
class Fit:
    """The maximum-likelihood divisor and its 95% interval (``high`` may be infinite: the
    data cannot rule out a flat curve). ``divisor`` is infinite when the higher-rated player
    did not win more often (no positive divisor fits) and 0 when the favourite always won."""

    divisor: float
    low: float
    high: float
    games: int
    log_likelihood: float

    def contains(self, divisor: float) -> bool:
        return self.low <= divisor <= self.high


def fit_divisor(xs: FloatArray, counts: FloatArray) -> Fit:
    """Fit ``D`` in ``p(x) = 1 / (1 + 10 ** (-x / D))`` to games that the player ahead by
    ``x`` won (``counts[i]`` games at ``xs[i]``), by maximum likelihood on ``beta = 1/D``.
    The interval is where twice the log-likelihood stays within 3.84 of its maximum."""
    n = counts
    games = round_half_away(float(n.sum())) if n.size else 0
    z = xs * LN10
    if games == 0 or not np.any(z != 0):
        return Fit(math.inf, 0.0, math.inf, games, 0.0)
    if float(np.dot(n, z)) <= 0:  # the score at beta = 0 points down: the MLE is beta <= 0
        flat = _log_likelihood(0.0, z, n)
        return Fit(math.inf, _upper_bound(0.0, flat, z, n), math.inf, games, flat)
    if not np.any((z < 0) & (n > 0)):  # the favourite won every game: beta runs off to inf
        return Fit(0.0, 0.0, math.inf, games, 0.0)
    beta = 1.0 / 1200.0
    current = _log_likelihood(beta, z, n)
    for _ in range(200):
        s = 1.0 / (1.0 + np.exp(np.clip(beta * z, -700, 700)))  # sigmoid(-beta z)
        gradient = float(np.dot(n, z * s))
        curvature = float(np.dot(n, z * z * s * (1.0 - s)))
        if curvature <= 0:
            break
        step = gradient / curvature
        # Damped Newton: keep beta positive and never let the likelihood fall.
        for _ in range(60):
            new = beta + step
            if new > 0:
                value = _log_likelihood(new, z, n)
                if value >= current - 1e-12 * abs(current):
                    break
            step /= 2
        if abs(step) <= 1e-13 * abs(beta):
            beta, current = new, value
            break
        beta, current = new, value
    best = _log_likelihood(beta, z, n)
    target = best - CHI2_95 / 2
    # Upper beta (lower divisor): double until below the target, then bisect.
    high_beta = beta * 2
    for _ in range(200):
        if _log_likelihood(high_beta, z, n) < target:
            break
        high_beta *= 2
    low = _bisect(beta, high_beta, target, z, n)
    if _log_likelihood(0.0, z, n) >= target:
        high = math.inf
    else:
        high_b = _bisect(beta, 0.0, target, z, n)
        high = 1.0 / high_b if high_b > 0 else math.inf
    return Fit(1.0 / beta, 1.0 / low, high, games, best)


def _upper_bound(beta: float, best: float, z: FloatArray, n: FloatArray) -> float:
    """With the MLE at beta <= 0: the smallest divisor the data still allow."""
    target = best - CHI2_95 / 2
    high_beta = 1e-6
    for _ in range(200):
        if _log_likelihood(high_beta, z, n) < target:
            return 1.0 / _bisect(max(beta, 0.0), high_beta, target, z, n)
        high_beta *= 2
    return 0.0


def _bisect(inside: float, outside: float, target: float, z: FloatArray, n: FloatArray) -> float:
    """The beta between ``inside`` (likelihood above target) and ``outside`` where it meets
    the target."""
    for _ in range(100):
        middle = (inside + outside) / 2
        if _log_likelihood(middle, z, n) >= target:
            inside = middle
        else:
            outside = middle
    return (inside + outside) / 2


# -- scores and bins ----------------------------------------------------------------------------


def _chance(xs: FloatArray, divisor: float) -> FloatArray:
    if math.isinf(divisor):
        return np.full(xs.shape, 0.5)
    if divisor == 0:
        return np.where(xs > 0, 1.0, np.where(xs < 0, 0.0, 0.5))
    exponent = np.clip(-xs / divisor, -300.0, 300.0)
    result: FloatArray = 1.0 / (1.0 + np.power(10.0, exponent))
    return result


@dataclass(frozen=True, slots=True)
class Scores:
    """How well a divisor predicts the games: mean log-loss (natural log; 0.693 is a coin)
    and Brier score (0.25 is a coin); lower is better."""

    divisor: float
    log_loss: float
    brier: float


def scores(xs: FloatArray, counts: FloatArray, divisor: float) -> Scores:
    """Log-loss and Brier score of ``divisor`` over the tallied games."""
    total = float(counts.sum())
    if total == 0:
        return Scores(divisor, math.nan, math.nan)
    p = np.clip(_chance(xs, divisor), 1e-300, 1.0)
    log_loss = float(-np.dot(counts, np.log(p)) / total)
    brier = float(np.dot(counts, (1.0 - p) ** 2) / total)
    return Scores(divisor, log_loss, brier)


@dataclass(frozen=True, slots=True)
class Bin:
    """Games whose favourite led by ``low`` to below ``high`` points (``high`` infinite for the
    last bin): how often the curve said the favourite wins (current and fitted divisor), how
    often it did (equal ratings count half a win), and a Wilson 95% interval on that."""

    low: float
    high: float
    games: int
    expected: float
    fitted: float
    actual: float
    actual_low: float
    actual_high: float

    @property
    def is_thin(self) -> bool:
        return self.games < MIN_BIN_GAMES


def _wilson(wins: float, games: float) -> tuple[float, float]:
    if games <= 0:
        return 0.0, 1.0
    p = wins / games
    z2 = Z_95 * Z_95
    centre = (p + z2 / (2 * games)) / (1 + z2 / games)
    half = Z_95 * math.sqrt(p * (1 - p) / games + z2 / (4 * games * games)) / (1 + z2 / games)
    return max(0.0, centre - half), min(1.0, centre + half)


def make_bins(
    xs: FloatArray,
    counts: FloatArray,
    *,
    current: float,
    fitted: float,
    width: float = 50.0,
    count: int = 12,
) -> list[Bin]:
    """The games in bins of ``width`` points of the favourite's lead (the last of ``count``
    bins takes every larger lead); empty bins are left out."""
    if not (width > 0 and count >= 1):
        raise InvalidInputError("width", "bins need a positive width and count")
    lead = np.abs(xs)
    index = np.minimum((lead // width).astype(np.int64), count - 1)
    wins = np.where(xs > 0, counts, np.where(xs == 0, counts / 2, 0.0))
    games = np.bincount(index, weights=counts, minlength=count)
    won = np.bincount(index, weights=wins, minlength=count)
    expected = np.bincount(index, weights=counts * _chance(lead, current), minlength=count)
    fit = np.bincount(index, weights=counts * _chance(lead, fitted), minlength=count)
    bins = []
    for i in range(count):
        if games[i] == 0:
            continue
        g = float(games[i])
        low, high = _wilson(float(won[i]), g)
        bins.append(
            Bin(
                i * width,
                math.inf if i == count - 1 else (i + 1) * width,
                round_half_away(g),
                float(expected[i]) / g,
                float(fit[i]) / g,
                float(won[i]) / g,
                low,
                high,
            )
        )
    return bins


# -- reading games ------------------------------------------------------------------------------


class Calibrator:
    """Feeds log records into a :class:`Tally`, for one ladder (``"table42"``/``"fibs"``).

    Counts, per player, the earlier games seen in the log (Table42) or takes the logged
    experience (FIBS), to tell games between settled ratings from games where a player is
    still settling (fewer than ``settled_games`` earlier games; FIBS: experience below
    ``settled_experience``). ``min_games`` > 0 leaves out games where either player had
    fewer earlier games (FIBS: less experience) than that. Memory: one count per player."""

    def __init__(
        self,
        ladder: Literal["table42", "fibs"] = "table42",
        *,
        min_games: int = 0,
        settled_games: int = SETTLED_GAMES,
        settled_experience: int = SETTLED_EXPERIENCE,
        resolution: float = RESOLUTION,
    ) -> None:
        self.ladder = ladder
        self.min_games = min_games
        self.settled_games = settled_games
        self.settled_experience = settled_experience
        self.tally = Tally(resolution)
        self.seen: dict[str, int] = {}
        self.records = 0
        self.other = 0
        self.settling = 0
        self.left_out = 0

    def add(self, record: LogRecord) -> None:
        """Take one record: a game of this ladder is tallied, anything else counted apart."""
        if not isinstance(record, GameRecord) or record.ladder != self.ladder:
            self.records += 1
            self.other += 1
            return
        self.add_game(record)

    def add_game(self, game: GameRecord) -> None:
        """Take one game of this ladder."""
        self.add_result(
            game.winner, game.loser, game.winner_before, game.loser_before,
            game.match_length or 1, game.winner_experience, game.loser_experience,
        )

    def add_result(
        self,
        winner: str,
        loser: str,
        winner_before: float,
        loser_before: float,
        length: int = 1,
        winner_experience: int | None = None,
        loser_experience: int | None = None,
    ) -> None:
        """Take one game of this ladder from its fields (a
        :data:`~rating_plugin.analysis.gamelog.GameResult`, as
        :func:`~rating_plugin.analysis.gamelog.scan_results` yields them)."""
        self.records += 1
        seen = self.seen
        w_prior = seen.get(winner, 0)
        l_prior = seen.get(loser, 0)
        if self.ladder == "fibs":
            if winner_experience is not None and loser_experience is not None:
                w_prior, l_prior = winner_experience, loser_experience
            seen[winner] = w_prior + length
            seen[loser] = l_prior + length
            settled_bound = self.settled_experience
        else:
            seen[winner] = w_prior + 1
            seen[loser] = l_prior + 1
            settled_bound = self.settled_games
        prior = w_prior if w_prior < l_prior else l_prior
        if prior < settled_bound:
            self.settling += 1
        if prior < self.min_games:
            self.left_out += 1
            return
        x = winner_before - loser_before
        if length != 1:
            x *= math.sqrt(length)
        self.tally.add(x)


@dataclass(frozen=True, slots=True)
class Report:
    """Everything ``calibrate`` prints: the fit, the bins, both divisors' scores, warnings."""

    ladder: str
    games: int
    current: Scores
    fitted: Scores
    fit: Fit
    bins: tuple[Bin, ...]
    settling: int
    left_out: int
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (infinite bounds become None)."""

        def clean(value: Any) -> Any:
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            return value

        data: dict[str, Any] = clean(asdict(self))
        return data


def report(
    calibrator: Calibrator,
    *,
    current: float | None = None,
    bin_width: float = 50.0,
    bin_count: int = 12,
) -> Report:
    """Fit, bin and score the tallied games; ``current`` is the divisor in use (default:
    1200 on Table42, the scale 2000 on FIBS)."""
    divisor = CURRENT_DIVISORS[calibrator.ladder] if current is None else current
    xs, counts = calibrator.tally.arrays()
    fit = fit_divisor(xs, counts)
    bins = make_bins(
        xs, counts, current=divisor, fitted=fit.divisor, width=bin_width, count=bin_count
    )
    games = fit.games
    unit = "scale" if calibrator.ladder == "fibs" else "divisor"
    warnings: list[str] = []
    if games == 0:
        warnings.append(f"no {calibrator.ladder} games in the log: nothing to fit")
    elif games < MIN_GAMES:
        warnings.append(
            f"only {games} games: too few to fit the {unit} reliably (use at least "
            f"{MIN_GAMES}; the interval below says how loose it is)"
        )
    if games and math.isinf(fit.divisor):
        warnings.append(
            "the higher-rated player did not win more often than the lower-rated one: the "
            f"ratings do not predict these results and no {unit} fits"
        )
    elif games and fit.divisor == 0:
        warnings.append(f"the higher-rated player won every game: the {unit} cannot be fitted")
    elif games and (math.isinf(fit.high) or (fit.high - fit.low) > 0.5 * fit.divisor):
        high = "infinity" if math.isinf(fit.high) else f"{fit.high:.0f}"
        warnings.append(
            f"the 95% interval ({fit.low:.0f} to {high}) is wide: the data cannot pin the "
            f"{unit} down (more games, or games between more distant ratings, would)"
        )
    considered = games + calibrator.left_out
    if considered and calibrator.settling / considered > SETTLING_WARN_SHARE:
        bound = (
            f"experience below {calibrator.settled_experience}"
            if calibrator.ladder == "fibs"
            else f"fewer than {calibrator.settled_games} earlier games"
        )
        warnings.append(
            f"{100 * calibrator.settling / considered:.0f}% of the games involve a player with "
            f"{bound}: those ratings are still settling, which makes results look less "
            f"predictable than they are and pushes the fitted {unit} up; --min-games leaves "
            "them out"
        )
    thin = [b for b in bins if b.is_thin]
    if thin and games:
        warnings.append(
            f"{len(thin)} bin(s) have fewer than {MIN_BIN_GAMES} games (marked '*'): their "
            "actual rate is noise"
        )
    return Report(
        ladder=calibrator.ladder,
        games=games,
        current=scores(xs, counts, divisor),
        fitted=scores(xs, counts, fit.divisor),
        fit=fit,
        bins=tuple(bins),
        settling=calibrator.settling,
        left_out=calibrator.left_out,
        warnings=tuple(warnings),
    )

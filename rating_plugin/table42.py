"""Table42 Elo: the rating of ranked ("Competitive") single games.

The formula, as the reference server (Go) computes it after every Competitive game::

    E_winner = 1 / (1 + 10 ** ((loser - winner) / D))        D = 1200 since 1.3.1
    E_loser  = 1 - E_winner
    winner   = round_half_away(winner_K * (1 - E_winner) * c)   c = 1 + log2(cube) / 6
    loser    = round_half_away(loser_K  * (0 - E_loser)  * c)

Rounding is half away from zero (:func:`rating_plugin.round_half_away`), as Go's
``math.Round``. Ratings are integers and start at 1500. Each player has their own K: 32, or
16 after 50 or more Competitive games in the 7 days before the game being scored
(:func:`k_factor`). Gammons and backgammons do not change the rating change; only the result,
the two ratings, the cube and the two K factors do.

Earlier versions of the formula are kept as named presets (:data:`VERSIONS`), so old games can
be explained with the rule that scored them:

==========  =======  ===============================  ==========================
preset      divisor  cube                             K
==========  =======  ===============================  ==========================
1.3.1       1200     coefficient 1 + log2(cube) / 6   32, 16 after a heavy week
1.2.0       800      coefficient                      32
1.0.5       400      coefficient                      32
pre-1.0.5   400      multiplies directly (c = cube)   32
==========  =======  ===============================  ==========================

``1.2.0`` covers releases 1.2.0 to 1.3.0 and ``1.0.5`` covers 1.0.5 up to 1.2.0. Releases
before 1.0.5 also gave extra points for gammons; the amount is not documented, so the
``pre-1.0.5`` preset scores only the cube rule.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Final

from rating_plugin.errors import InvalidInputError
from rating_plugin.rounding import round_half_away
from rating_plugin.validation import check_count, check_positive, check_rating

__all__ = [
    "CUBE_VALUES",
    "CURRENT_VERSION",
    "DEFAULT_K",
    "DIVISOR",
    "HEAVY_WEEK_GAMES",
    "HEAVY_WEEK_K",
    "MAX_CUBE",
    "START_RATING",
    "VERSIONS",
    "WINDOW_SECONDS",
    "CubeRule",
    "Table42Change",
    "Table42Version",
    "change",
    "check_cube",
    "cube_coefficient",
    "expected_score",
    "get_version",
    "k_factor",
]

START_RATING: Final = 1500
DEFAULT_K: Final = 32
HEAVY_WEEK_K: Final = 16
#: Competitive games in the window from which a player's K drops to :data:`HEAVY_WEEK_K`.
HEAVY_WEEK_GAMES: Final = 50
#: The sliding window for :data:`HEAVY_WEEK_GAMES`: the 7 days before the game being scored.
WINDOW_SECONDS: Final = 7 * 24 * 3600
DIVISOR: Final = 1200
MAX_CUBE: Final = 64
CUBE_VALUES: Final = (1, 2, 4, 8, 16, 32, 64)

# Computed once with the formula itself, so the values are bit-for-bit 1 + log2(cube) / 6.
_COEFFICIENTS: Final[dict[int, float]] = {cube: 1 + math.log2(cube) / 6 for cube in CUBE_VALUES}


class CubeRule(StrEnum):
    """How the doubling cube scales a rating change."""

    COEFFICIENT = "coefficient"  # c = 1 + log2(cube) / 6, from 1.0.5 on
    MULTIPLY = "multiply"  # c = cube, before 1.0.5


@dataclass(frozen=True, slots=True)
class Table42Version:
    """One version of the Table42 formula: its divisor, cube rule and whether K halves."""

    name: str
    divisor: int
    cube_rule: CubeRule
    has_heavy_week_k: bool

    def cube_factor(self, cube: int) -> float:
        """The factor this version applies for ``cube`` (validated: 1, 2, 4 ... 64)."""
        if self.cube_rule is CubeRule.COEFFICIENT:
            return cube_coefficient(cube)
        return float(check_cube(cube))


VERSIONS: Final[dict[str, Table42Version]] = {
    "1.3.1": Table42Version("1.3.1", 1200, CubeRule.COEFFICIENT, has_heavy_week_k=True),
    "1.2.0": Table42Version("1.2.0", 800, CubeRule.COEFFICIENT, has_heavy_week_k=False),
    "1.0.5": Table42Version("1.0.5", 400, CubeRule.COEFFICIENT, has_heavy_week_k=False),
    "pre-1.0.5": Table42Version("pre-1.0.5", 400, CubeRule.MULTIPLY, has_heavy_week_k=False),
}
CURRENT_VERSION: Final = VERSIONS["1.3.1"]


@dataclass(frozen=True, slots=True)
class Table42Change:
    """The rating change of one Competitive game.

    ``winner`` is the winner's gain (>= 0) and ``loser`` the loser's change (<= 0), both
    integers; they mirror each other only when both players have the same K.
    """

    winner: int
    loser: int
    winner_expected: float
    loser_expected: float
    coefficient: float
    winner_k: int
    loser_k: int

    def to_dict(self) -> dict[str, int | float]:
        """A JSON-ready copy of the fields."""
        return asdict(self)


def get_version(version: str | Table42Version) -> Table42Version:
    """Look up a preset by name (``"1.3.1"``, ``"1.2.0"``, ``"1.0.5"``, ``"pre-1.0.5"``)."""
    if isinstance(version, Table42Version):
        return version
    preset = VERSIONS.get(version) if isinstance(version, str) else None
    if preset is None:
        names = ", ".join(VERSIONS)
        raise InvalidInputError("version", f"must be one of {names}, got {version!r}")
    return preset


def _cube_error(cube: object) -> InvalidInputError:
    allowed = ", ".join(map(str, CUBE_VALUES))
    return InvalidInputError("cube", f"must be one of {allowed}, got {cube!r}")


def check_cube(cube: int) -> int:
    """Accept a cube value: 1, 2, 4, 8, 16, 32 or 64 (an int, not a bool)."""
    if type(cube) is int and cube in _COEFFICIENTS:
        return cube
    raise _cube_error(cube)


def cube_coefficient(cube: int) -> float:
    """``1 + log2(cube) / 6``: 1.0 at cube 1 up to 2.0 at cube 64.

    Needs a cube in 1, 2, 4 ... 64; raises :class:`~rating_plugin.errors.InvalidInputError`
    (a ``ValueError``) naming ``cube`` otherwise.
    """
    coefficient = _COEFFICIENTS.get(cube) if type(cube) is int else None
    if coefficient is None:
        raise _cube_error(cube)
    return coefficient


def k_factor(recent_ranked_games: int, *, version: str | Table42Version = "1.3.1") -> int:
    """A player's K from their Competitive games in the 7 days before the game being scored.

    32 below :data:`HEAVY_WEEK_GAMES` (50) games, 16 from 50 on. Versions before 1.3.1 had no
    heavy-week rule: K is always 32 there.
    """
    games = check_count(recent_ranked_games, "recent_ranked_games")
    if games >= HEAVY_WEEK_GAMES and get_version(version).has_heavy_week_k:
        return HEAVY_WEEK_K
    return DEFAULT_K


def _expected(player: float, opponent: float, divisor: float) -> float:
    try:
        power: float = 10.0 ** ((opponent - player) / divisor)
    except OverflowError:  # the opponent is so much stronger that the chance is 0.0
        return 0.0
    return 1.0 / (1.0 + power)


def expected_score(player: float, opponent: float, divisor: float = DIVISOR) -> float:
    """The player's expected score (win chance, 0..1) against the opponent.

    ``1 / (1 + 10 ** ((opponent - player) / divisor))``; ratings must be finite numbers and
    the divisor positive.
    """
    player = check_rating(player, "player")
    opponent = check_rating(opponent, "opponent")
    divisor = check_positive(divisor, "divisor")
    return _expected(player, opponent, divisor)


def _check_k(value: int, field: str) -> int:
    if type(value) is int and value > 0:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(field, f"must be a whole number, got {value!r}")
    raise InvalidInputError(field, f"must be greater than 0, got {value!r}")


def change(
    winner: float,
    loser: float,
    *,
    cube: int = 1,
    winner_k: int = DEFAULT_K,
    loser_k: int = DEFAULT_K,
    divisor: float | None = None,
    version: str | Table42Version = "1.3.1",
) -> Table42Change:
    """Score one Competitive game that ``winner`` (rating) won against ``loser`` (rating).

    Needs finite ratings, a cube in 1, 2, 4 ... 64 (the cube's value when the game ended,
    forfeits included), positive whole K factors (see :func:`k_factor`) and a version preset
    (default the current 1.3.1); ``divisor`` overrides the version's divisor. Promises the
    reference's order of operations and rounding, ``winner >= 0`` and ``loser <= 0``.
    Raises :class:`~rating_plugin.errors.InvalidInputError` (a ``ValueError``) naming the
    field on bad input.
    """
    winner = check_rating(winner, "winner")
    loser = check_rating(loser, "loser")
    winner_k = _check_k(winner_k, "winner_k")
    loser_k = _check_k(loser_k, "loser_k")
    rule = VERSIONS.get(version) if type(version) is str else None
    if rule is None:
        rule = get_version(version)
    if rule.cube_rule is CubeRule.COEFFICIENT:
        coefficient = cube_coefficient(cube)
    else:
        coefficient = float(check_cube(cube))
    divisor = rule.divisor if divisor is None else check_positive(divisor, "divisor")

    winner_expected = _expected(winner, loser, divisor)
    loser_expected = 1 - winner_expected
    return Table42Change(
        winner=round_half_away(winner_k * (1 - winner_expected) * coefficient),
        loser=round_half_away(loser_k * (0 - loser_expected) * coefficient),
        winner_expected=winner_expected,
        loser_expected=loser_expected,
        coefficient=coefficient,
        winner_k=winner_k,
        loser_k=loser_k,
    )

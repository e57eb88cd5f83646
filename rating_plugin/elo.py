"""Classic Elo (chess style, with draws), unrounded.

::

    E  = 1 / (1 + 10 ** ((R_opponent - R) / 400))
    R' = R + K * (S - E)          S = 1 (win), 0.5 (draw), 0 (loss)

Nothing is rounded: show the change with 2 decimals (1500 beating 1600 with K = 32 gives
E = 0.3599, +20.48, 1520.48). K is the caller's choice; :data:`K_PRESETS` holds the usual
values and :func:`fide_k_factor` / :func:`fide_update` apply FIDE's rating regulations
(K 40 / 20 / 10 and a rating difference counted as at most 400 points).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Final

from rating_plugin.errors import InvalidInputError
from rating_plugin.validation import check_count, check_positive, check_rating

__all__ = [
    "DIVISOR",
    "FIDE_ESTABLISHED_GAMES",
    "FIDE_JUNIOR_CEILING",
    "FIDE_MASTER_RATING",
    "FIDE_MAX_DIFFERENCE",
    "K_PRESETS",
    "SCORES",
    "EloUpdate",
    "check_score",
    "expected_score",
    "fide_k_factor",
    "fide_update",
    "update",
]

DIVISOR: Final = 400
#: The usual K factors: 40 for new players, 20 for most players, 10 for players rated over
#: 2400 (FIDE's simple rule of thumb), 32 on many amateur platforms.
K_PRESETS: Final[dict[str, int]] = {"new": 40, "standard": 20, "master": 10, "amateur": 32}
#: The scores a game can give: win, draw, loss.
SCORES: Final = (1.0, 0.5, 0.0)
#: FIDE: K = 40 until a player has completed this many rated games.
FIDE_ESTABLISHED_GAMES: Final = 30
#: FIDE: juniors keep K = 40 while rated under this.
FIDE_JUNIOR_CEILING: Final = 2300
#: FIDE: K = 10 for good once a player's rating has reached this.
FIDE_MASTER_RATING: Final = 2400
#: FIDE: a larger rating difference counts as this many points.
FIDE_MAX_DIFFERENCE: Final = 400


@dataclass(frozen=True, slots=True)
class EloUpdate:
    """The outcome of one game for one player, unrounded.

    ``new_rating == rating + change`` and ``change == k * (score - expected_score)``.
    """

    rating: float
    expected_score: float
    score: float
    k: float
    change: float
    new_rating: float

    def to_dict(self) -> dict[str, float]:
        """A JSON-ready copy of the fields."""
        return asdict(self)


def _expected(rating: float, opponent: float) -> float:
    try:
        power: float = 10.0 ** ((opponent - rating) / DIVISOR)
    except OverflowError:  # the opponent is so much stronger that the expectation is 0.0
        return 0.0
    return 1.0 / (1.0 + power)


def expected_score(rating: float, opponent: float) -> float:
    """The player's expected score (0..1): ``1 / (1 + 10 ** ((opponent - rating) / 400))``."""
    return _expected(check_rating(rating, "rating"), check_rating(opponent, "opponent"))


def check_score(score: float) -> float:
    """Accept a game score: 1 (win), 0.5 (draw) or 0 (loss); returns it as a float."""
    if (type(score) is float or type(score) is int) and score in SCORES:
        return float(score)
    raise InvalidInputError("score", f"must be 1 (win), 0.5 (draw) or 0 (loss), got {score!r}")


def update(
    rating: float,
    opponent: float,
    score: float,
    k: float,
    *,
    max_difference: float | None = None,
) -> EloUpdate:
    """Rate one game: the player rated ``rating`` scored ``score`` against ``opponent``.

    Needs finite ratings, a score of 1, 0.5 or 0 and a positive K. ``max_difference`` caps
    the rating difference the expectation sees (FIDE counts anything over 400 as 400).
    Promises an unrounded :class:`EloUpdate`; a win never lowers the rating, a loss never
    raises it. Raises :class:`~rating_plugin.errors.InvalidInputError` (a ``ValueError``)
    naming the field on bad input.
    """
    rating = check_rating(rating, "rating")
    opponent = check_rating(opponent, "opponent")
    score = check_score(score)
    k = check_positive(k, "k")
    seen = opponent
    if max_difference is not None:
        cap = check_positive(max_difference, "max_difference")
        seen = min(max(opponent, rating - cap), rating + cap)
    expected = _expected(rating, seen)
    delta = k * (score - expected)
    return EloUpdate(
        rating=rating,
        expected_score=expected,
        score=score,
        k=k,
        change=delta,
        new_rating=rating + delta,
    )


def fide_k_factor(
    rating: float,
    *,
    rated_games: int,
    is_junior: bool = False,
    has_reached_2400: bool = False,
) -> int:
    """The K factor FIDE's rating regulations give a player.

    * 40 until the player has completed :data:`FIDE_ESTABLISHED_GAMES` (30) rated games;
    * 40 for a junior (until the end of the year of their 18th birthday) rated under 2300;
    * 10 once the rating has reached 2400 (``has_reached_2400``, or ``rating >= 2400``),
      for good, even if it drops again;
    * 20 otherwise.
    """
    rating = check_rating(rating, "rating")
    games = check_count(rated_games, "rated_games")
    if games < FIDE_ESTABLISHED_GAMES:
        return K_PRESETS["new"]
    if is_junior and rating < FIDE_JUNIOR_CEILING:
        return K_PRESETS["new"]
    if has_reached_2400 or rating >= FIDE_MASTER_RATING:
        return K_PRESETS["master"]
    return K_PRESETS["standard"]


def fide_update(
    rating: float,
    opponent: float,
    score: float,
    *,
    rated_games: int,
    is_junior: bool = False,
    has_reached_2400: bool = False,
) -> EloUpdate:
    """:func:`update` with FIDE's K (:func:`fide_k_factor`) and the 400-point cap."""
    k = fide_k_factor(
        rating, rated_games=rated_games, is_junior=is_junior, has_reached_2400=has_reached_2400
    )
    return update(rating, opponent, score, k, max_difference=FIDE_MAX_DIFFERENCE)

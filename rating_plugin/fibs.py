"""The FIBS rating for n-point matches.

For a match to ``n`` points between ratings ``A`` and ``B``::

    P(A wins) = 1 / (1 + 10 ** (-(A - B) * sqrt(n) / 2000))
    points    = 4 * sqrt(n) * (1 - P(winner wins))

The winner gains ``points`` and the loser loses ``points``, each side multiplied by its own
new-player multiplier ``max(1, 5 - experience / 100)``, where experience is the sum of the
lengths of the rated matches that player finished before this one. Ratings keep their decimals
(show them with 2) and start at 1500; a player with less than 10 experience is shown as "new".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Final

from rating_plugin.validation import check_count, check_positive_int, check_rating

__all__ = [
    "NEW_PLAYER_EXPERIENCE",
    "START_RATING",
    "FibsChange",
    "change",
    "experience_multiplier",
    "is_new_player",
    "points_at_stake",
    "win_probability",
]

START_RATING: Final = 1500.0
#: Below this experience a player's rating is shown as "new" and kept off the leaderboard.
NEW_PLAYER_EXPERIENCE: Final = 10
#: The multiplier of a player with no experience; it falls by 1 per 100 experience.
MAX_MULTIPLIER: Final = 5.0
#: Experience from which the multiplier stays at 1.
ESTABLISHED_EXPERIENCE: Final = 400


@dataclass(frozen=True, slots=True)
class FibsChange:
    """The rating change of one rated match.

    ``winner`` is the winner's gain (>= 0), ``loser`` the loser's change (<= 0); ``points`` is
    the amount at stake before the multipliers, so ``winner == points * winner_multiplier``
    and ``loser == -points * loser_multiplier``.
    """

    winner: float
    loser: float
    winner_probability: float
    winner_multiplier: float
    loser_multiplier: float
    points: float

    def to_dict(self) -> dict[str, float]:
        """A JSON-ready copy of the fields."""
        return asdict(self)


def _probability(a: float, b: float, root: float) -> float:
    try:
        power: float = 10.0 ** (-(a - b) * root / 2000)
    except OverflowError:  # b is so much stronger that a's chance is 0.0
        return 0.0
    return 1.0 / (1.0 + power)


def win_probability(a: float, b: float, match_length: int) -> float:
    """The chance (0..1) that the player rated ``a`` wins a match to ``match_length`` against ``b``.

    Needs finite ratings and a whole match length >= 1.
    """
    a = check_rating(a, "a")
    b = check_rating(b, "b")
    length = check_positive_int(match_length, "match_length")
    return _probability(a, b, math.sqrt(length))


def experience_multiplier(experience: int) -> float:
    """``max(1, 5 - experience / 100)``: 5 at experience 0, 3.5 at 150, 1 from 400 on.

    Needs a whole experience >= 0 (the sum of the player's finished rated match lengths).
    """
    experience = check_count(experience, "experience")
    return max(1.0, MAX_MULTIPLIER - experience / 100)


def is_new_player(experience: int) -> bool:
    """True while the player's experience is below :data:`NEW_PLAYER_EXPERIENCE` (10)."""
    return check_count(experience, "experience") < NEW_PLAYER_EXPERIENCE


def points_at_stake(winner: float, loser: float, match_length: int) -> float:
    """``4 * sqrt(n) * (1 - P(winner wins))``, before the new-player multipliers."""
    winner = check_rating(winner, "winner")
    loser = check_rating(loser, "loser")
    root = math.sqrt(check_positive_int(match_length, "match_length"))
    return 4 * root * (1 - _probability(winner, loser, root))


def change(
    winner: float,
    loser: float,
    *,
    match_length: int,
    winner_experience: int,
    loser_experience: int,
) -> FibsChange:
    """Score one rated match to ``match_length`` points that ``winner`` won against ``loser``.

    Needs finite ratings, a whole match length >= 1 and each player's experience before the
    match (whole, >= 0). Promises unrounded floats with ``winner >= 0`` and ``loser <= 0``.
    Raises :class:`~rating_plugin.errors.InvalidInputError` (a ``ValueError``) naming the
    field on bad input.
    """
    winner = check_rating(winner, "winner")
    loser = check_rating(loser, "loser")
    root = math.sqrt(check_positive_int(match_length, "match_length"))
    winner_experience = check_count(winner_experience, "winner_experience")
    loser_experience = check_count(loser_experience, "loser_experience")

    probability = _probability(winner, loser, root)
    points = 4 * root * (1 - probability)
    winner_multiplier = max(1.0, MAX_MULTIPLIER - winner_experience / 100)
    loser_multiplier = max(1.0, MAX_MULTIPLIER - loser_experience / 100)
    return FibsChange(
        winner=points * winner_multiplier,
        loser=0.0 - points * loser_multiplier,
        winner_probability=probability,
        winner_multiplier=winner_multiplier,
        loser_multiplier=loser_multiplier,
        points=points,
    )

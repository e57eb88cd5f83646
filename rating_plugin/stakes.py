"""Stake preview: before a game, what each player of a pairing stands to win or lose.

One function per rating system; each returns a frozen :class:`StakePreview` with a
:class:`PlayerStake` for both sides, computed with exactly the formulas that will score the
game, so the preview and the settlement cannot disagree. ``to_dict()`` gives the JSON-ready
shape a lobby sends to its clients; ``table42_stakes(1500, 1800).player.to_dict()`` is::

    {"rating": 1500, "expected_score": 0.35993500019711494, "win": 20, "loss": -12, "k": 32}
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rating_plugin import elo, fibs, table42
from rating_plugin.validation import check_rating

__all__ = [
    "PlayerStake",
    "StakePreview",
    "System",
    "elo_stakes",
    "fibs_stakes",
    "table42_stakes",
]


class System(StrEnum):
    """The rating systems a preview can be made for."""

    TABLE42 = "table42"
    FIBS = "fibs"
    ELO = "elo"


@dataclass(frozen=True, slots=True)
class PlayerStake:
    """One side of a pairing: its rating change on a win, a loss and (classic Elo) a draw.

    ``win >= 0`` and ``loss <= 0``. Table42 changes are integers; FIBS and Elo changes are
    unrounded floats. ``k`` (Table42, Elo) and ``multiplier`` (FIBS) say what scaled them.
    """

    rating: float
    expected_score: float
    win: float
    loss: float
    draw: float | None = None
    k: float | None = None
    multiplier: float | None = None

    def to_dict(self) -> dict[str, float]:
        """The fields as a JSON-ready dict; fields that do not apply are left out."""
        out: dict[str, float] = {
            "rating": self.rating,
            "expected_score": self.expected_score,
            "win": self.win,
            "loss": self.loss,
        }
        if self.draw is not None:
            out["draw"] = self.draw
        if self.k is not None:
            out["k"] = self.k
        if self.multiplier is not None:
            out["multiplier"] = self.multiplier
        return out


@dataclass(frozen=True, slots=True)
class StakePreview:
    """What both players of a pairing win or lose under one rating system."""

    system: System
    player: PlayerStake
    opponent: PlayerStake
    cube: int | None = None
    coefficient: float | None = None
    version: str | None = None
    match_length: int | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict: ``system``, ``player``, ``opponent`` and the game's settings."""
        out: dict[str, object] = {
            "system": self.system.value,
            "player": self.player.to_dict(),
            "opponent": self.opponent.to_dict(),
        }
        if self.cube is not None:
            out["cube"] = self.cube
        if self.coefficient is not None:
            out["coefficient"] = self.coefficient
        if self.version is not None:
            out["version"] = self.version
        if self.match_length is not None:
            out["match_length"] = self.match_length
        return out


def table42_stakes(
    rating: float,
    opponent: float,
    *,
    cube: int = 1,
    k: int = table42.DEFAULT_K,
    opponent_k: int = table42.DEFAULT_K,
    version: str | table42.Table42Version = "1.3.1",
) -> StakePreview:
    """Table42 Elo stakes of a game at ``cube`` (the cube a forfeit or drop would be scored at).

    Each player has their own K (see :func:`rating_plugin.table42.k_factor`). E.g. at cube 1,
    1500 against 1800: the 1500 player wins +20 or loses -12.
    """
    preset = table42.get_version(version)
    if_player_wins = table42.change(
        rating, opponent, cube=cube, winner_k=k, loser_k=opponent_k, version=preset
    )
    if_opponent_wins = table42.change(
        opponent, rating, cube=cube, winner_k=opponent_k, loser_k=k, version=preset
    )
    return StakePreview(
        system=System.TABLE42,
        player=PlayerStake(
            rating=rating,
            expected_score=if_player_wins.winner_expected,
            win=if_player_wins.winner,
            loss=if_opponent_wins.loser,
            k=k,
        ),
        opponent=PlayerStake(
            rating=opponent,
            expected_score=if_opponent_wins.winner_expected,
            win=if_opponent_wins.winner,
            loss=if_player_wins.loser,
            k=opponent_k,
        ),
        cube=cube,
        coefficient=if_player_wins.coefficient,
        version=preset.name,
    )


def fibs_stakes(
    rating: float,
    opponent: float,
    *,
    match_length: int,
    experience: int,
    opponent_experience: int,
) -> StakePreview:
    """FIBS stakes of a match to ``match_length``, each side with its own experience."""
    if_player_wins = fibs.change(
        rating,
        opponent,
        match_length=match_length,
        winner_experience=experience,
        loser_experience=opponent_experience,
    )
    if_opponent_wins = fibs.change(
        opponent,
        rating,
        match_length=match_length,
        winner_experience=opponent_experience,
        loser_experience=experience,
    )
    return StakePreview(
        system=System.FIBS,
        player=PlayerStake(
            rating=rating,
            expected_score=if_player_wins.winner_probability,
            win=if_player_wins.winner,
            loss=if_opponent_wins.loser,
            multiplier=if_player_wins.winner_multiplier,
        ),
        opponent=PlayerStake(
            rating=opponent,
            expected_score=if_opponent_wins.winner_probability,
            win=if_opponent_wins.winner,
            loss=if_player_wins.loser,
            multiplier=if_player_wins.loser_multiplier,
        ),
        match_length=match_length,
    )


def _elo_side(
    rating: float, opponent: float, k: float, max_difference: float | None
) -> PlayerStake:
    win = elo.update(rating, opponent, 1, k, max_difference=max_difference)
    draw = elo.update(rating, opponent, 0.5, k, max_difference=max_difference)
    loss = elo.update(rating, opponent, 0, k, max_difference=max_difference)
    return PlayerStake(
        rating=rating,
        expected_score=win.expected_score,
        win=win.change,
        loss=loss.change,
        draw=draw.change,
        k=win.k,
    )


def elo_stakes(
    rating: float,
    opponent: float,
    *,
    k: float,
    opponent_k: float | None = None,
    max_difference: float | None = None,
) -> StakePreview:
    """Classic Elo stakes (win, draw, loss) for both players; ``opponent_k`` defaults to ``k``.

    ``max_difference`` caps the rating difference as :func:`rating_plugin.elo.update` does
    (400 under FIDE rules).
    """
    rating = check_rating(rating, "rating")
    opponent = check_rating(opponent, "opponent")
    return StakePreview(
        system=System.ELO,
        player=_elo_side(rating, opponent, k, max_difference),
        opponent=_elo_side(
            opponent, rating, k if opponent_k is None else opponent_k, max_difference
        ),
    )

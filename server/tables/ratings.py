"""Which games are rated, and the ``rating`` / ``boosted`` events players receive.

:func:`plan_rating` is pure: from the table's mode and length and the two seated players it
decides the ladder (``table42`` for a Competitive single game, ``fibs`` for a Competitive match
to n), whether Boosted points are earned, or why the game is not rated. The game-start event
carries the plan, so both players know before the first roll.

Never rated, in this order of precedence (the ``unrated_reason`` codes):

- ``bot``              a game against the computer (never rated, on no ladder)
- ``private_room``     a private room with a friend
- ``tournament_game``  a tournament game (tournaments award podium prizes instead)
- ``guest_player``     either player is a guest
- ``same_address``     both players connect from the same network address: the same IPv4
                       address or IPv6 /64, an IPv4-mapped IPv6 address counting as IPv4
                       (:func:`same_network`, the very rule matchmaking pairs by)
- ``boosted_mode``     a Boosted game: no Elo, but the winner earns Boosted points
- ``pair_limit``       the two players already played their limit of rated games within
                       the pair window (settings ``pair_limit``, ``pair_window``): decided
                       by the shell when the game starts (``RatingStore.reserve_pair_game``)
                       and handed in as ``pair_limited``

:func:`rating_event` and :func:`boosted_event` turn the rating store's results into the events
pushed to each player (see ``PROTOCOL.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from server.matchmaking.policy import DEFAULT_SETTINGS
from server.protocol.ids import network_key
from server.protocol.messages import TableMode

if TYPE_CHECKING:  # the store is I/O; the table machine uses this module and stays pure
    from rating_plugin.store import BoostedResult, PlayerChange, Settlement

TABLE42 = "table42"
FIBS = "fibs"
PAIR_LIMIT = "pair_limit"

SAME_NETWORK_IPV6_PREFIX: int = DEFAULT_SETTINGS.ipv6_prefix
"""IPv6 prefix length counted as one network address, here and in matchmaking (64)."""


def same_network(a: str, b: str) -> bool:
    """Whether two client addresses count as one network address (see the module docstring).

    The same comparison as matchmaking's (:func:`server.protocol.ids.network_key` at
    :data:`SAME_NETWORK_IPV6_PREFIX`), so a pair matchmaking allows is never refused a rating
    for it, and the other way round.
    """
    return network_key(a, ipv6_prefix=SAME_NETWORK_IPV6_PREFIX) == network_key(
        b, ipv6_prefix=SAME_NETWORK_IPV6_PREFIX
    )


@dataclass(frozen=True, slots=True)
class RatedPlayer:
    """What the rating decision needs to know about a seated player."""

    player: str
    is_guest: bool
    address: str
    is_bot: bool = False


@dataclass(frozen=True, slots=True)
class RatingPlan:
    """``ladder`` is set for Elo/FIBS-rated games; ``boosted`` for Boosted points; else
    ``unrated_reason`` says why nothing changes."""

    ladder: str | None
    boosted: bool
    unrated_reason: str | None

    @property
    def is_rated(self) -> bool:
        return self.ladder is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rated": self.is_rated,
            "ladder": self.ladder,
            "boosted": self.boosted,
            "unrated_reason": self.unrated_reason,
        }


def plan_rating(
    mode: TableMode, match_length: int, players: tuple[RatedPlayer, RatedPlayer], *,
    pair_limited: bool = False,
) -> RatingPlan:
    """Decide how a game between ``players`` at a table of ``mode`` is scored (pure).
    ``pair_limited``: the pair limit refused this game a rating (asked only of a game that
    would be rated otherwise: see :func:`counts_for_pair_limit`)."""
    if players[0].is_bot or players[1].is_bot:
        return RatingPlan(None, False, "bot")
    if mode is TableMode.PRIVATE:
        return RatingPlan(None, False, "private_room")
    if mode is TableMode.TOURNAMENT:
        return RatingPlan(None, False, "tournament_game")
    if players[0].is_guest or players[1].is_guest:
        return RatingPlan(None, False, "guest_player")
    if same_network(players[0].address, players[1].address):
        return RatingPlan(None, False, "same_address")
    if mode is TableMode.BOOSTED:
        return RatingPlan(None, True, "boosted_mode")
    if pair_limited:
        return RatingPlan(None, False, PAIR_LIMIT)
    return RatingPlan(TABLE42 if match_length == 0 else FIBS, False, None)


def counts_for_pair_limit(
    mode: TableMode, match_length: int, players: tuple[RatedPlayer, RatedPlayer]
) -> bool:
    """Whether the game would be rated but for the pair limit: the one kind of game the shell
    counts (and may refuse) against the pair's limit before it starts."""
    return plan_rating(mode, match_length, players).is_rated


def _number(value: float, ladder: str) -> float | int:
    return int(value) if ladder == TABLE42 else float(value)


def rating_event(
    settlement: Settlement, mine: PlayerChange, theirs: PlayerChange, *, table: str
) -> dict[str, Any]:
    """The ``rating`` event for the player of ``mine`` (see PROTOCOL.md)."""
    ladder = str(settlement.ladder)
    return {
        "type": "rating",
        "game_id": settlement.game_id,
        "table": table,
        "ladder": ladder,
        "player": mine.player,
        "opponent": theirs.player,
        "won": mine is settlement.winner,
        "reason": settlement.reason,
        "old": _number(mine.rating_before, ladder),
        "new": _number(mine.rating_after, ladder),
        "change": _number(mine.change, ladder),
        "expected_score": mine.expected_score,
        "k": mine.k,
        "cube": settlement.cube,
        "cube_coefficient": mine.cube_coefficient,
        "recent_games": mine.recent_games,
        "match_length": settlement.match_length,
        "multiplier": mine.multiplier,
        "experience_before": mine.experience_before,
        "opponent_old": _number(theirs.rating_before, ladder),
        "opponent_change": _number(theirs.change, ladder),
        "finished_at": settlement.finished_at,
    }


def rating_events(settlement: Settlement, *, table: str) -> list[tuple[str, dict[str, Any]]]:
    """``(player, event)`` for the winner and the loser."""
    w, lo = settlement.winner, settlement.loser
    return [
        (w.player, rating_event(settlement, w, lo, table=table)),
        (lo.player, rating_event(settlement, lo, w, table=table)),
    ]


def boosted_events(result: BoostedResult, *, table: str) -> list[tuple[str, dict[str, Any]]]:
    """``(player, event)`` for both players of a Boosted game."""
    base = {
        "type": "boosted",
        "game_id": result.game_id,
        "table": table,
        "winner": result.winner,
        "loser": result.loser,
        "points": result.points,
        "winner_total": result.winner_total,
        "finished_at": result.finished_at,
    }
    return [
        (result.winner, {**base, "player": result.winner, "won": True}),
        (result.loser, {**base, "player": result.loser, "won": False}),
    ]

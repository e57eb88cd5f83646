"""The "match found" message each player of a pairing receives. Pure.

Built from the two tickets alone (they carry the rating, display name, FIBS experience and
recent Table42 games captured at queue time), so whichever node claimed the pair can send it.
The stake preview comes from :mod:`rating_plugin.stakes`, with exactly the formulas that will
score the game: Table42 at cube 1 with each side's own K, or FIBS for the match length with
each side's own experience. Boosted games change no rating: ``stakes`` is ``null``.

Shape (JSON / msgpack; ``table`` only when given)::

    {"type": "match_found", "pool": "match-3", "mode": "rated_match", "ladder": "fibs",
     "rated": true, "match_length": 3, "table": "kB9rMFnnuYBV", "waited": 12.5,
     "you":      {"player": "ann", "name": "Ann", "rating": 1523.37, "rating_shown": "1523.37"},
     "opponent": {"player": "bob", "name": "Bob", "rating": 1500.0, "rating_shown": "new"},
     "stakes": {"system": "fibs", "player": {"win": 5.2, "loss": -1.9, ...},
                "opponent": {...}, "match_length": 3}}

``stakes.player`` is always the receiving player's side. ``rating_shown`` is what a client
displays: an integer on Table42, two decimals on FIBS (half away from zero), ``"new"`` for a
FIBS player with experience under 10, ``"guest"`` for a guest.
"""

from __future__ import annotations

from typing import Any

from rating_plugin import round_half_away, stakes, table42
from server.matchmaking.policy import Pairing, Ticket, pool_by_id

__all__ = ["MATCH_FOUND", "match_found_messages", "rating_shown", "stake_preview"]

MATCH_FOUND = "match_found"


def rating_shown(ticket: Ticket) -> str:
    """How ``ticket``'s rating is displayed on its pool's ladder."""
    if ticket.is_guest:
        return "guest"
    pool = pool_by_id(ticket.pool)
    if pool.is_fibs:
        if ticket.is_new:
            return "new"
        return f"{round_half_away(ticket.rating * 100) / 100:.2f}"
    return str(round_half_away(ticket.rating))


def stake_preview(player: Ticket, opponent: Ticket) -> stakes.StakePreview | None:
    """What ``player`` and ``opponent`` win or lose, from ``player``'s side (None: unrated).

    Table42: cube 1, K from each side's ``recent_games`` (32 when unknown). FIBS: the pool's
    match length, each side's ``experience`` (0 when unknown, the new-player multiplier 5).
    """
    pool = pool_by_id(player.pool)
    if not pool.is_rated:
        return None
    if pool.is_fibs:
        return stakes.fibs_stakes(
            player.rating,
            opponent.rating,
            match_length=pool.match_length,
            experience=player.experience or 0,
            opponent_experience=opponent.experience or 0,
        )
    return stakes.table42_stakes(
        player.rating,
        opponent.rating,
        cube=1,
        k=_k(player),
        opponent_k=_k(opponent),
    )


def _k(ticket: Ticket) -> int:
    if ticket.recent_games is None:
        return table42.DEFAULT_K
    return table42.k_factor(ticket.recent_games)


def _side(ticket: Ticket) -> dict[str, Any]:
    return {
        "player": ticket.player,
        "name": ticket.display_name,
        "rating": ticket.rating,
        "rating_shown": rating_shown(ticket),
    }


def match_found_messages(
    pairing: Pairing, *, table: str | None = None, now: float | None = None
) -> dict[str, dict[str, Any]]:
    """Player id -> the "match found" message for that player (see the module docstring).

    ``table`` is the id of the table the game was started at, when known; ``now`` (epoch
    seconds) adds ``waited``, how long that player queued.
    """
    pool = pool_by_id(pairing.first.pool)
    messages: dict[str, dict[str, Any]] = {}
    for me, them in ((pairing.first, pairing.second), (pairing.second, pairing.first)):
        preview = stake_preview(me, them)
        message: dict[str, Any] = {
            "type": MATCH_FOUND,
            "pool": pool.id,
            "mode": pool.mode.value,
            "ladder": pool.ladder if pool.is_rated else None,
            "rated": pool.is_rated,
            "match_length": pool.match_length,
            "you": _side(me),
            "opponent": _side(them),
            "stakes": None if preview is None else preview.to_dict(),
        }
        if table is not None:
            message["table"] = table
        if now is not None:
            message["waited"] = me.waited(now)
        messages[me.player] = message
    return messages

"""What matchmaking tells clients: "match found", queue status, expiry, the pools overview.
Pure: built from tickets and statuses alone, so whichever node holds them can send them.

``match_found`` (:func:`match_found_messages`), one per player of a pairing. The tickets carry
the rating, display name, FIBS experience and recent Table42 games captured at queue time.
The stake preview comes from :mod:`rating_plugin.stakes`, with exactly the formulas that will
score the game: Table42 at cube 1 with each side's own K, or FIBS for the match length with
each side's own experience. Boosted games change no rating: ``stakes`` is ``null``::

    {"type": "match_found", "pool": "match-3", "mode": "rated_match", "ladder": "fibs",
     "rated": true, "match_length": 3, "table": "kB9rMFnnuYBV", "waited": 12.5,
     "you":      {"player": "ann", "name": "Ann", "rating": 1523.37, "rating_shown": "1523.37"},
     "opponent": {"player": "bob", "name": "Bob", "rating": 1500.0, "rating_shown": "new"},
     "stakes": {"system": "fibs", "player": {"win": 5.2, "loss": -1.9, ...},
                "opponent": {...}, "match_length": 3}}

``stakes.player`` is always the receiving player's side; ``table`` and ``waited`` appear when
given. ``rating_shown`` is what a client displays: an integer on Table42, two decimals on
FIBS (half away from zero), ``"new"`` for a FIBS player with experience under 10, ``"guest"``
for a guest.

``queued`` / ``queue_status`` (:func:`status_message`): the answer to queueing and the
periodic "still searching" update::

    {"type": "queue_status", "pool": "competitive", "waited": 12.0, "window": 170.0,
     "window_cap": 400.0, "seconds_to_cap": 23.0, "rating": 1500, "note": null}

``note`` is ``"same_network"`` when everyone else waiting in the rated pool plays from the
player's network (never paired for rated play), else null.

``queue_expired`` (:func:`expired_message`): the ticket waited longer than ``ticket_ttl``.

The pools overview for ``GET /api/matchmaking`` (:func:`overview`)::

    {"pools": [{"pool": "competitive", "title": "Competitive single game",
                "mode": "competitive", "ladder": "table42", "rated": true,
                "match_length": 1, "waiting": 42}, ...],
     "window": {"base": 50.0, "rate": 10.0, "cap": 400.0, "seconds_to_cap": 35.0}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rating_plugin import round_half_away, stakes, table42
from server.matchmaking.policy import (
    DEFAULT_SETTINGS,
    POOLS,
    MatchmakingSettings,
    Pairing,
    Ticket,
    TicketStatus,
    pool_by_id,
)

__all__ = [
    "MATCH_FOUND",
    "QUEUED",
    "QUEUE_EXPIRED",
    "QUEUE_STATUS",
    "expired_message",
    "match_found_messages",
    "overview",
    "rating_shown",
    "stake_preview",
    "status_message",
]

MATCH_FOUND = "match_found"
QUEUED = "queued"
QUEUE_STATUS = "queue_status"
QUEUE_EXPIRED = "queue_expired"


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
    pairing: Pairing, *, table: str | None = None, now: float | None = None,
    unrated_reason: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Player id -> the "match found" message for that player (see the module docstring).

    ``table`` is the id of the table the game was started at, when known; ``now`` (epoch
    seconds) adds ``waited``, how long that player queued. ``unrated_reason`` (a rated pool's
    game the server decided not to rate, e.g. ``pair_limit``): ``rated`` false, no stakes.
    """
    pool = pool_by_id(pairing.first.pool)
    rated = pool.is_rated and unrated_reason is None
    messages: dict[str, dict[str, Any]] = {}
    for me, them in ((pairing.first, pairing.second), (pairing.second, pairing.first)):
        preview = stake_preview(me, them) if rated else None
        message: dict[str, Any] = {
            "type": MATCH_FOUND,
            "pool": pool.id,
            "mode": pool.mode.value,
            "ladder": pool.ladder if rated else None,
            "rated": rated,
            "unrated_reason": unrated_reason if pool.is_rated else "boosted_mode",
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


def status_message(
    status: TicketStatus,
    *,
    kind: str = QUEUE_STATUS,
    settings: MatchmakingSettings = DEFAULT_SETTINGS,
    replaced_pool: str | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """The ``queue_status`` message (``kind=QUEUED`` for the answer to queueing, which also
    says which pool's ticket it replaced, if any); ``note``: why no pairing can happen now
    whatever the window (:func:`server.matchmaking.policy.pairing_note`), or None."""
    message: dict[str, Any] = {
        "type": kind,
        "pool": status.ticket.pool,
        "waited": status.waited,
        "window": status.window,
        "window_cap": settings.window_cap,
        "seconds_to_cap": status.seconds_to_cap,
        "rating": status.ticket.rating,
        "note": note,
    }
    if kind == QUEUED:
        message["replaced_pool"] = replaced_pool
    return message


def expired_message(ticket: Ticket, now: float) -> dict[str, Any]:
    """The ``queue_expired`` message: the ticket was dropped after waiting too long."""
    return {"type": QUEUE_EXPIRED, "pool": ticket.pool, "waited": ticket.waited(now)}


def overview(
    sizes: Mapping[str, int], settings: MatchmakingSettings = DEFAULT_SETTINGS
) -> dict[str, Any]:
    """The pools and their queue sizes (``MatchmakingQueue.sizes()``), and the window curve."""
    return {
        "pools": [
            {
                "pool": pool.id,
                "title": pool.title,
                "mode": pool.mode.value,
                "ladder": pool.ladder,
                "rated": pool.is_rated,
                "match_length": pool.match_length,
                "waiting": int(sizes.get(pool.id, 0)),
            }
            for pool in POOLS
        ],
        "window": {
            "base": settings.window_base,
            "rate": settings.window_rate,
            "cap": settings.window_cap,
            "seconds_to_cap": settings.seconds_to_cap,
        },
    }

"""Lobby matchmaking by rating, the pure policy (the Redis queue is the shell's
:mod:`server.store.queue`, driven by :mod:`server.lobby.matchmaker`).

* :mod:`server.matchmaking.policy` (pure) — pools, tickets, the widening window, the pairing
  rules and the pairing pass;
* :mod:`server.matchmaking.messages` (pure) — what clients are sent: "match found" with its
  stake preview, queue status, expiry, and the pools overview;
* :mod:`server.matchmaking.errors` — the exception tree with stable codes;

Nothing here imports asyncio, aiohttp or redis.
"""

from __future__ import annotations

from server.matchmaking.errors import (
    GuestNotAllowedError,
    InRankedGameError,
    InvalidTicketError,
    MatchmakingError,
    NotQueuedError,
    QueueFullError,
    UnknownPoolError,
)
from server.matchmaking.messages import (
    expired_message,
    match_found_messages,
    overview,
    stake_preview,
    status_message,
)
from server.matchmaking.policy import (
    DEFAULT_SETTINGS,
    POOLS,
    SAME_NETWORK,
    GameMode,
    MatchmakingSettings,
    Pairing,
    PassPlan,
    Pool,
    Ticket,
    TicketStatus,
    acceptable,
    admit,
    pairing_note,
    plan_pass,
    pool_by_id,
    ticket_status,
    wait_for_gap,
    window,
)

__all__ = [
    "DEFAULT_SETTINGS",
    "POOLS",
    "SAME_NETWORK",
    "GameMode",
    "GuestNotAllowedError",
    "InRankedGameError",
    "InvalidTicketError",
    "MatchmakingError",
    "MatchmakingSettings",
    "NotQueuedError",
    "Pairing",
    "PassPlan",
    "Pool",
    "QueueFullError",
    "Ticket",
    "TicketStatus",
    "UnknownPoolError",
    "acceptable",
    "admit",
    "expired_message",
    "match_found_messages",
    "overview",
    "pairing_note",
    "plan_pass",
    "pool_by_id",
    "stake_preview",
    "status_message",
    "ticket_status",
    "wait_for_gap",
    "window",
]

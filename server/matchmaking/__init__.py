"""Lobby matchmaking by rating: a pure policy and a Redis-backed queue shared by all nodes.

``policy`` (pure) decides who may queue where and who plays whom; ``queue`` keeps the tickets
in Redis and claims pairs atomically; ``errors`` holds the exception tree with stable codes.
"""

from __future__ import annotations

from server.matchmaking.errors import (
    GuestNotAllowedError,
    InRankedGameError,
    InvalidTicketError,
    MatchmakingError,
    NotQueuedError,
    UnknownPoolError,
)
from server.matchmaking.policy import (
    DEFAULT_SETTINGS,
    POOLS,
    GameMode,
    MatchmakingSettings,
    Pairing,
    PassPlan,
    Pool,
    Ticket,
    TicketStatus,
    acceptable,
    admit,
    network_key,
    plan_pass,
    pool_by_id,
    ticket_status,
    wait_for_gap,
    window,
)

__all__ = [
    "DEFAULT_SETTINGS",
    "POOLS",
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
    "Ticket",
    "TicketStatus",
    "UnknownPoolError",
    "acceptable",
    "admit",
    "network_key",
    "plan_pass",
    "pool_by_id",
    "ticket_status",
    "wait_for_gap",
    "window",
]

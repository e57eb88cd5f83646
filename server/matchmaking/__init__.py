"""Lobby matchmaking by rating: a pure policy and a Redis-backed queue shared by all nodes.

* :mod:`server.matchmaking.policy` (pure) — pools, tickets, the widening window, the pairing
  rules and the pairing pass;
* :mod:`server.matchmaking.messages` (pure) — what clients are sent: "match found" with its
  stake preview, queue status, expiry, and the pools overview;
* :mod:`server.matchmaking.errors` — the exception tree with stable codes;
* :mod:`server.matchmaking.queue` — the tickets in Redis, cancel, sizes, the pairing lease and
  the atomic claim, and :func:`~server.matchmaking.queue.pairing_loop`.

The queue's names (``MatchmakingQueue``, ``QueueSettings``, ``PassResult``, ``Enqueued``,
``pairing_loop``) are imported lazily on first use, so importing the pure parts never imports
redis.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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
    "QueueFullError",
    "Ticket",
    "TicketStatus",
    "UnknownPoolError",
    "acceptable",
    "admit",
    "expired_message",
    "match_found_messages",
    "network_key",
    "overview",
    "plan_pass",
    "pool_by_id",
    "stake_preview",
    "status_message",
    "ticket_status",
    "wait_for_gap",
    "window",
]

if TYPE_CHECKING:  # type checkers see the real names; at run time __getattr__ loads them
    from server.matchmaking.queue import Enqueued as Enqueued
    from server.matchmaking.queue import MatchmakingQueue as MatchmakingQueue
    from server.matchmaking.queue import PassResult as PassResult
    from server.matchmaking.queue import QueueSettings as QueueSettings
    from server.matchmaking.queue import pairing_loop as pairing_loop

_QUEUE_NAMES = frozenset(
    {"Enqueued", "MatchmakingQueue", "PassResult", "QueueSettings", "pairing_loop"}
)


def __getattr__(name: str) -> Any:
    if name in _QUEUE_NAMES:
        return getattr(import_module("server.matchmaking.queue"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

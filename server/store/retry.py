"""Retrying a Redis write while Redis is away: the one loop every caller uses.

A write that fails with ``RedisError`` or ``OSError`` (Redis down, the connection cut, a
timeout) is tried again after a pause that doubles from ``first`` up to ``most`` seconds;
``attempts`` tries at most (then the last error is raised), or until it succeeds. Writes made
this way must be idempotent (every multi-key write here is a script keyed by a game or table
id, see docs/rating-store.md), since a try that timed out may have been applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from redis.exceptions import RedisError

T = TypeVar("T")

REDIS_AWAY = (RedisError, OSError)
"""What a write raises when Redis (or the network to it) is away; anything else is a bug."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Pauses between tries: ``first`` seconds, doubling up to ``most``; ``attempts`` tries at
    most (None: until the write succeeds)."""

    first: float = 0.05
    most: float = 1.0
    attempts: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.most:
            raise ValueError(f"need 0 < first <= most, got {self.first}, {self.most}")
        if self.attempts is not None and self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")


async def retry_redis(
    write: Callable[[], Awaitable[T]],
    backoff: Backoff = Backoff(),
    *,
    before: Callable[[], None] | None = None,
    failed: Callable[[int, Exception], None] | None = None,
    pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """``await write()``, tried again after each Redis error as ``backoff`` says; returns what
    it returns. ``before()`` runs before every try and may raise to stop (a table fenced off);
    ``failed(tries, error)`` is told of every failure (metrics, a log line); ``pause(seconds)``
    waits between tries (``asyncio.sleep``, or a wait that ends early when Redis is back).
    Raises the last Redis error once ``backoff.attempts`` tries failed; cancellation goes
    through at once."""
    delay = backoff.first
    tries = 0
    while True:
        if before is not None:
            before()
        try:
            return await write()
        except REDIS_AWAY as exc:
            tries += 1
            if failed is not None:
                failed(tries, exc)
            if backoff.attempts is not None and tries >= backoff.attempts:
                raise
        await pause(delay)
        delay = min(delay * 2, backoff.most)

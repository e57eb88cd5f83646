"""Token buckets per client key, pure (no asyncio or aiohttp): the core of every rate limit
(HTTP requests in server/net/http_middleware.py, guest/register/login in server/net/http_api.py,
table creation in server/lobby/creation.py; one socket's messages use :class:`Bucket` through
server/protocol/session.py's ``TokenBucket``).

Each key (a client address, or the digest of a bearer credential) has a bucket of ``burst``
tokens refilled continuously at ``rate`` tokens per second; a request spends one. A request
finding its bucket empty is refused and told how long until a token is back (the HTTP shell
sends that as ``Retry-After``). Memory is bounded: at most ``max_keys`` buckets are kept; past
that the least recently used bucket is forgotten (forgetting one only makes it full again, so
the bound can make the limit more lenient, never stricter).

``rate == 0`` turns the limit off (every request passes, nothing is stored).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Bucket", "RateLimiter", "lru_bucket"]


@dataclass(slots=True)
class Bucket:
    """One key's bucket: ``tokens`` left at ``updated`` (seconds, any monotonic clock)."""

    tokens: float
    updated: float

    def refill(self, rate: float, burst: float, now: float) -> None:
        """Refill at ``rate`` up to ``burst`` tokens. Time going backwards refills nothing."""
        if now > self.updated:
            self.tokens = min(burst, self.tokens + (now - self.updated) * rate)
            self.updated = now

    def spend(self, rate: float, burst: float, now: float) -> float:
        """Refill at ``rate`` up to ``burst`` tokens, then spend one. Returns 0.0 when there
        was one, else the seconds until one is back (nothing is spent then; infinite at rate
        0). Time going backwards refills nothing."""
        self.refill(rate, burst, now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / rate if rate > 0 else float("inf")


def lru_bucket(buckets: dict[str, Bucket], key: str, burst: float, max_keys: int,
               now: float) -> Bucket:
    """``key``'s bucket in ``buckets`` (a new one is full at ``now``), moved to the most
    recently used end; past ``max_keys`` the least recently used is forgotten."""
    bucket = buckets.pop(key, None)  # re-inserted below: the dict stays LRU-ordered
    if bucket is None:
        bucket = Bucket(burst, now)
        if len(buckets) >= max_keys:
            del buckets[next(iter(buckets))]
    buckets[key] = bucket
    return bucket


class RateLimiter:
    """Buckets of ``burst`` tokens refilled at ``rate`` per second, one per key."""

    __slots__ = ("_buckets", "burst", "max_keys", "rate")

    def __init__(self, rate: float, burst: int, *, max_keys: int = 100_000) -> None:
        if rate < 0 or burst < 1 or max_keys < 1:
            raise ValueError("rate must be >= 0, burst and max_keys >= 1")
        self.rate = float(rate)
        self.burst = float(burst)
        self.max_keys = max_keys
        self._buckets: dict[str, Bucket] = {}

    @property
    def is_enabled(self) -> bool:
        return self.rate > 0

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, now: float) -> float:
        """Spend one of ``key``'s tokens at ``now``. Returns 0.0 when the request may go on,
        else the seconds until a token is back (nothing is spent then). Time going backwards
        refills nothing."""
        if self.rate <= 0:
            return 0.0
        bucket = lru_bucket(self._buckets, key, self.burst, self.max_keys, now)
        return bucket.spend(self.rate, self.burst, now)

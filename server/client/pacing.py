"""The client's own message budget, pure (no I/O): it never sends faster than the server
accepts (PROTOCOL.md §1, the rate limit).

The server gives each socket a token bucket of ``rate_burst`` messages refilled at
``rate_limit`` per second (``welcome.limits``; 30/s and 60 by default), and charges a
``sync`` answer one message more per ``sync_events_per_message`` events it carries. The
client keeps a bucket of its own, a little smaller and a little slower than the server's
(:data:`BURST_SHARE`, :data:`RATE_SHARE`), spends one token per frame it sends and waits
when it has none; the margin absorbs the network's jitter (frames sent apart that arrive
together). A refusal that comes all the same (``rate_limited``) empties it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from server.ratelimit import Bucket

DEFAULT_RATE = 30.0
"""The server's default ``rate_limit`` (messages per second), used until ``welcome``."""
DEFAULT_BURST = 60
"""The server's default ``rate_burst``."""
DEFAULT_SYNC_EVENTS_PER_MESSAGE = 50
"""The server's default ``sync_events_per_message``."""
RATE_SHARE = 0.9
"""The share of the server's rate the client uses."""
BURST_SHARE = 0.8
"""The share of the server's burst the client uses (at least one message)."""


class SendPace:
    """One socket's budget of messages: :meth:`take` before each frame."""

    __slots__ = ("_bucket", "burst", "rate", "sync_events_per_message")

    def __init__(self, now: float, rate: float = DEFAULT_RATE, burst: int = DEFAULT_BURST,
                 sync_events_per_message: int = DEFAULT_SYNC_EVENTS_PER_MESSAGE) -> None:
        self.rate = 0.0
        self.burst = 1.0
        self.sync_events_per_message = sync_events_per_message
        self._set(rate, burst)
        self._bucket = Bucket(self.burst, now)

    def _set(self, rate: float, burst: float) -> None:
        self.rate = rate * RATE_SHARE
        self.burst = float(max(1, math.floor(burst * BURST_SHARE)))

    def restart(self, now: float) -> None:
        """A new socket: the server's bucket for it is full, and so is this one."""
        self._bucket = Bucket(self.burst, now)

    def configure(self, limits: Mapping[str, Any]) -> None:
        """Adopt the limits the server announced (``welcome.limits``); a missing or
        malformed one keeps its value."""
        rate = _positive(limits.get("rate_limit"))
        burst = _positive(limits.get("rate_burst"))
        per = _positive(limits.get("sync_events_per_message"))
        self._set(self.rate / RATE_SHARE if rate is None else rate,
                  self.burst / BURST_SHARE if burst is None else burst)
        self._bucket.tokens = min(self._bucket.tokens, self.burst)
        if per is not None:
            self.sync_events_per_message = max(1, int(per))

    def take(self, now: float) -> float:
        """Spend one token: 0.0 when the frame may go now, else the seconds to wait before
        asking again (nothing is spent then)."""
        return self._bucket.spend(self.rate, self.burst, now)

    def charge_sync(self, events: int, now: float) -> None:
        """A ``sync`` answer of ``events`` events came: the server charged the socket for
        it, so this bucket pays the same (it may go below zero)."""
        if events > 0:
            self._charge(events / self.sync_events_per_message, now)

    def refused(self, now: float) -> None:
        """The server refused a frame (``rate_limited``): its bucket is empty, so is this
        one."""
        self._refill(now)
        self._bucket.tokens = min(self._bucket.tokens, 0.0)

    def _charge(self, cost: float, now: float) -> None:
        self._refill(now)
        self._bucket.tokens -= cost

    def _refill(self, now: float) -> None:
        bucket = self._bucket
        if now > bucket.updated:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now

    @property
    def tokens(self) -> float:
        """Tokens left as of the last update (for tests and logs)."""
        return self._bucket.tokens


def _positive(value: Any) -> float | None:
    """``value`` as a number when it is a finite positive one, else None."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 \
            and math.isfinite(value):
        return float(value)
    return None

"""CPU budgets of the costly HTTP routes, pure (no asyncio or aiohttp): per client key, a
bucket of *cost units* (about a millisecond of the node's CPU each) refilled at ``rate``
units per second up to ``burst``.

A request may start while its bucket holds more than nothing; it is charged what it is
expected to cost when it starts and the difference once its cost is known (a record read
costs by its size, and a kept answer little), so the balance may go below zero, down to
``-burst``: the key's next requests wait until it is refilled above zero. Charging the
rest after the fact lets a cost depend on the answer without reading it twice; charging
the expected cost first keeps a thousand requests sent at once from all starting before
the first is charged. The shell (``server/net/cost_gate.py``) keys one bucket by the
client's address and one by its bearer credential, and answers 429 ``rate_limited`` with
``Retry-After`` (:meth:`CostBudget.wait`) past either.

Memory is bounded as in :mod:`server.ratelimit`: at most ``max_keys`` buckets, the least
recently used forgotten first (a forgotten bucket is full again: the bound can only make the
budget more lenient). ``rate == 0`` turns the budget off.
"""

from __future__ import annotations

from server.ratelimit import Bucket, lru_bucket

__all__ = ["COSTS", "CostBudget", "record_cost"]

COSTS: dict[str, float] = {
    "record": 1.0,         # a record or replay read, plus record_cost's size part
    "mat": 1.0,            # a .mat download (stored text)
    "review_cached": 2.0,  # a review already kept (stored bytes)
    "review": 400.0,       # a review computed (seconds of a worker's CPU: 2.5 in a burst)
}
"""What each kind of request costs, in units (a record read adds :func:`record_cost`). For
scale: a profile or a leaderboard page costs the node about one unit; those routes are
cheap enough for the request rate limit alone and draw nothing from the budget."""
RECORD_BYTES_PER_UNIT = 256 * 1024
"""A record read costs one more unit per this many bytes of its answer (as sent)."""


def record_cost(sent_bytes: int, *, decompressed: bool = False) -> float:
    """A record read's cost: :data:`COSTS` ``record``, and one unit per
    :data:`RECORD_BYTES_PER_UNIT` sent; twice that when the node had to decompress it (the
    client did not accept gzip)."""
    size = sent_bytes / RECORD_BYTES_PER_UNIT
    return COSTS["record"] + (2.0 * size if decompressed else size)


class CostBudget:
    """Buckets of cost units per key (see the module docstring)."""

    __slots__ = ("_balances", "burst", "max_keys", "rate")

    def __init__(self, rate: float, burst: float, *, max_keys: int = 100_000) -> None:
        if rate < 0 or burst <= 0 or max_keys < 1:
            raise ValueError("rate must be >= 0, burst > 0 and max_keys >= 1")
        self.rate = float(rate)
        self.burst = float(burst)
        self.max_keys = max_keys
        self._balances: dict[str, Bucket] = {}  # tokens: the units left

    @property
    def is_enabled(self) -> bool:
        return self.rate > 0

    def __len__(self) -> int:
        return len(self._balances)

    def _balance(self, key: str, now: float) -> Bucket:
        balance = lru_bucket(self._balances, key, self.burst, self.max_keys, now)
        balance.refill(self.rate, self.burst, now)
        return balance

    def wait(self, key: str, now: float) -> float:
        """0.0 when ``key`` may start a request at ``now``, else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        units = self._balance(key, now).tokens
        return 0.0 if units > 0 else (-units + 1e-9) / self.rate

    def charge(self, key: str, cost: float, now: float) -> None:
        """Take ``cost`` units from ``key``'s bucket (down to ``-burst`` at most); a negative
        ``cost`` gives units back (a request that cost less than was taken when it
        started), up to ``burst``."""
        if self.rate <= 0 or cost == 0:
            return
        balance = self._balance(key, now)
        balance.tokens = min(self.burst, max(-self.burst, balance.tokens - cost))

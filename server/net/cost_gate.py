"""The CPU budget of the costly HTTP routes (record, ``.mat``, review): one
:class:`server.cost_budget.CostBudget` bucket per client address (its network, as the HTTP
rate limit counts it) and one per bearer credential (the digest of the ``Authorization``
value), each of ``http_cost_rate`` units per second up to ``http_cost_burst``.

A route asks :meth:`CostGate.admit` first with what it expects the request to cost (429
``rate_limited`` with ``Retry-After`` while either bucket is spent; else that cost is taken at
once, so a thousand requests sent together cannot all pass before the first is charged) and
:meth:`CostGate.charge` with the rest once its answer's cost is known. A record's expected
cost is what the last read of that game cost on this node (:meth:`CostGate.expected`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aiohttp import web

from server.config import Settings
from server.cost_budget import CostBudget
from server.metrics import Metrics
from server.net.addresses import client_address
from server.net.http_api import limited
from server.net.http_middleware import credential_key
from server.protocol.errors import ErrorCode
from server.protocol.ids import network_key
from server.tables.ratings import SAME_NETWORK_IPV6_PREFIX

REMEMBERED = 10_000
"""Games whose record's last read cost a node remembers (a record's first read here is
expected to cost ``EXPECTED_RECORD``)."""
EXPECTED_RECORD = 2.0


class CostGate:
    """Per-address and per-credential cost budgets (see the module docstring)."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic,
                 metrics: Metrics | None = None) -> None:
        self.budget = CostBudget(settings.http_cost_rate, settings.http_cost_burst,
                                 max_keys=settings.http_rate_max_clients)
        self.trusted = settings.trusted_networks
        self.clock = clock
        self.refused = 0  # requests answered 429 by the budget (tests)
        self.metrics = metrics if metrics is not None else Metrics(enabled=False)
        self._costs: dict[str, float] = {}  # game id -> its record's last read's cost (LRU)

    def _keys(self, request: web.Request) -> list[str]:
        address = client_address(request.remote, request.headers.get("X-Forwarded-For"),
                                 self.trusted)
        keys = ["a:" + network_key(address, ipv6_prefix=SAME_NETWORK_IPV6_PREFIX)]
        authorization = request.headers.get("Authorization")
        if authorization:
            keys.append(credential_key(authorization))
        return keys

    def admit(self, request: web.Request, upfront: float) -> web.Response | None:
        """429 with ``Retry-After`` while the request's address or credential has spent
        its budget; else None, ``upfront`` units taken."""
        if not self.budget.is_enabled:
            return None
        now = self.clock()
        keys = self._keys(request)
        wait = max(self.budget.wait(key, now) for key in keys)
        if wait <= 0:
            for key in keys:
                self.budget.charge(key, upfront, now)
            return None
        self.refused += 1
        self.metrics.refused("http_cost_budget")
        self.metrics.error(ErrorCode.RATE_LIMITED)
        return limited("this address or account has spent its budget for costly requests; "
                       "retry later", wait)

    def expected(self, game_id: str, default: float) -> float:
        """What the last read of ``game_id``'s record cost here (``default`` if none)."""
        return self._costs.get(game_id, default)

    def remember(self, game_id: str, cost: float) -> None:
        self._costs.pop(game_id, None)
        self._costs[game_id] = cost
        if len(self._costs) > REMEMBERED:
            del self._costs[next(iter(self._costs))]

    def charge(self, request: web.Request, cost: float) -> None:
        """Take ``cost`` units from the request's address and credential."""
        if not self.budget.is_enabled:
            return
        now = self.clock()
        for key in self._keys(request):
            self.budget.charge(key, cost, now)

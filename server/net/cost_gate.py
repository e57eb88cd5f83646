"""The CPU budget of the costly HTTP routes (record, ``.mat``, review): one
:class:`server.cost_budget.CostBudget` bucket per client address (its network, as the HTTP
rate limit counts it) and one per bearer credential (the digest of the ``Authorization``
value), each of ``http_cost_rate`` units per second up to ``http_cost_burst``.

A route asks :meth:`CostGate.refusal` first (429 ``rate_limited`` with ``Retry-After`` while
either bucket is spent) and :meth:`CostGate.charge` once its answer's cost is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aiohttp import web

from server.config import Settings
from server.cost_budget import CostBudget
from server.matchmaking.policy import network_key
from server.net.addresses import client_address
from server.net.http_api import limited
from server.net.http_middleware import credential_key
from server.tables.ratings import SAME_NETWORK_IPV6_PREFIX


class CostGate:
    """Per-address and per-credential cost budgets (see the module docstring)."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.budget = CostBudget(settings.http_cost_rate, settings.http_cost_burst,
                                 max_keys=settings.http_rate_max_clients)
        self.trusted = settings.trusted_networks
        self.clock = clock
        self.refused = 0  # requests answered 429 by the budget (tests, metrics)

    def _keys(self, request: web.Request) -> list[str]:
        address = client_address(request.remote, request.headers.get("X-Forwarded-For"),
                                 self.trusted)
        keys = ["a:" + network_key(address, ipv6_prefix=SAME_NETWORK_IPV6_PREFIX)]
        authorization = request.headers.get("Authorization")
        if authorization:
            keys.append(credential_key(authorization))
        return keys

    def refusal(self, request: web.Request) -> web.Response | None:
        """429 with ``Retry-After`` while the request's address or credential has spent
        its budget; None when it may go on."""
        if not self.budget.is_enabled:
            return None
        now = self.clock()
        wait = max(self.budget.wait(key, now) for key in self._keys(request))
        if wait <= 0:
            return None
        self.refused += 1
        return limited("this address or account has spent its budget for costly requests; "
                       "retry later", wait)

    def charge(self, request: web.Request, cost: float) -> None:
        """Take ``cost`` units from the request's address and credential."""
        if not self.budget.is_enabled:
            return
        now = self.clock()
        for key in self._keys(request):
            self.budget.charge(key, cost, now)

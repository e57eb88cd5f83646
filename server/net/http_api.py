"""HTTP routes: accounts (register, login, guest, logout, me), the table list and health.

Every body is a JSON object of at most ``http_max_body`` bytes. Errors are
``{"error": {"code", "message", "field"?}}`` with the codes of ``PROTOCOL.md``:

======================  ======  ============================================
code                    status  when
======================  ======  ============================================
bad_request             400     the body is not a JSON object
missing_field           400     a required field is absent (``field`` names it)
bad_field               400     a field has the wrong type or value
name_taken              409     register: the name is in use (any case)
invalid_credentials     401     login: unknown name or wrong password
unauthorized            401     no valid bearer token (logout, me)
busy                    503     too many password hashes queued; retry
too_big                 413     the body is over the limit (server/net/http_middleware.py)
======================  ======  ============================================
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from server.bot.strategy import LEVEL_NAMES, Level
from server.config import Settings
from server.metrics import CONTENT_TYPE_LATEST, Metrics
from server.net.addresses import client_address
from server.net.ws import bearer_token
from server.protocol.errors import ErrorCode, ProtocolError, http_error_body, wait_seconds
from server.protocol.ids import network_key
from server.protocol.messages import has_lone_surrogate
from server.ratelimit import RateLimiter
from server.store.accounts import AccountError, Accounts
from server.store.lobby_index import LISTED_MODES
from server.store.persistence import Persistence
from server.tables.ratings import SAME_NETWORK_IPV6_PREFIX

MAX_LIST_OFFSET = 1_000_000

STATUS = {
    ErrorCode.BAD_REQUEST: 400,
    ErrorCode.MISSING_FIELD: 400,
    ErrorCode.BAD_FIELD: 400,
    ErrorCode.NAME_TAKEN: 409,
    ErrorCode.INVALID_CREDENTIALS: 401,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.BUSY: 503,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.TOO_BIG: 413,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.INTERNAL: 500,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NO_SUCH_TOURNAMENT: 404,
    ErrorCode.NO_SUCH_GAME: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.GUEST_NOT_ALLOWED: 403,
}


def error_response(exc: ProtocolError) -> web.Response:
    response = web.json_response(http_error_body(exc),
                                 status=STATUS.get(ErrorCode(exc.code), 400))
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(wait_seconds(exc.retry_after))
    return response


def limited(message: str, wait: float) -> web.Response:
    """429 ``rate_limited`` with ``Retry-After`` (whole seconds, at least 1)."""
    err = AccountError(ErrorCode.RATE_LIMITED, message)
    err.retry_after = wait
    return error_response(err)


async def json_body(request: web.Request, timeout: float = 10.0) -> dict[str, Any]:
    try:
        async with asyncio.timeout(timeout):
            raw = await request.read()
    except TimeoutError:
        raise ProtocolError(ErrorCode.BAD_REQUEST,
                            f"the body did not arrive within {timeout:g} s") from None
    try:
        data = json.loads(raw) if raw else {}
    except (ValueError, UnicodeDecodeError, RecursionError):
        # RecursionError: a deeply nested document (a few KiB of "[[[[...") is not a bug.
        raise ProtocolError(ErrorCode.BAD_REQUEST, "the body must be a JSON object") from None
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.BAD_REQUEST, "the body must be a JSON object")
    field = _field_with_surrogate(data)
    if field is not None:
        raise ProtocolError(ErrorCode.BAD_FIELD,
                            f"field {field!r} must be Unicode text (it holds a lone surrogate)",
                            field=field)
    return data


def _field_with_surrogate(body: dict[str, Any]) -> str | None:
    """The top-level field of ``body`` holding a string (at any depth, keys included) with a
    lone surrogate (``"\\ud800"`` in JSON), or None. Such a string cannot be encoded as
    UTF-8: refused here, every handler after this gets only text it can store and hash."""
    for name, value in body.items():
        if has_lone_surrogate(name):
            return name.encode("utf-8", "replace").decode("utf-8")
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if has_lone_surrogate(item):
                    return name
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return None


class AccountRoutes:
    def __init__(
        self, accounts: Accounts, persistence: Persistence, node_id: str, list_limit: int,
        *, settings: Settings | None = None, metrics: Metrics | None = None,
        busy: Callable[[], bool] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.monotonic = monotonic  # the node's clock, for the rate limits
        self.accounts = accounts
        self.persistence = persistence
        self.node_id = node_id
        self.list_limit = list_limit
        self.settings = settings if settings is not None else Settings(node_id=node_id)
        self.metrics = metrics if metrics is not None else Metrics(enabled=False)
        self.draining = False  # set on shutdown: /readyz answers 503
        self.busy = busy if busy is not None else lambda: False  # the node's load (readyz)
        s = self.settings
        on = s.limits
        self._trusted = s.trusted_networks
        # Per client address (the forwarded one behind a trusted proxy; an IPv6 /64).
        self._limits = {
            "guest": RateLimiter(s.guest_rate if on else 0.0, s.guest_burst),
            "register": RateLimiter(s.register_rate if on else 0.0, s.register_burst),
            "login": RateLimiter(s.login_rate if on else 0.0, s.login_burst),
        }

    async def bot_token(self, request: web.Request) -> web.Response:
        """``POST /api/bot {"level"?}``: a token marked as a bot (for ``python -m
        server.bot``): never rated, no matchmaking, no tournaments."""
        try:
            body = await json_body(request)
            raw = body.get("level", "beginner")
            if raw not in LEVEL_NAMES:
                raise ProtocolError(ErrorCode.BAD_FIELD,
                                    "field 'level' must be one of " + ", ".join(LEVEL_NAMES),
                                    field="level")
            issued = await self.accounts.bot(str(Level(raw)))
        except ProtocolError as exc:
            return error_response(exc)
        return web.json_response(issued.to_dict())

    def address(self, request: web.Request) -> str:
        address = client_address(request.remote, request.headers.get("X-Forwarded-For"),
                                 self._trusted)
        return network_key(address, ipv6_prefix=SAME_NETWORK_IPV6_PREFIX)

    def _take(self, kind: str, address: str) -> web.Response | None:
        wait = self._limits[kind].take(address, self.monotonic())
        if wait <= 0:
            return None
        self.metrics.refused(f"{kind}_per_address")
        return limited(f"too many {kind} requests from this address; retry later", wait)

    def limited_by(
        self, kind: str, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """``handler`` behind this address's ``kind`` limit (``POST /api/bot`` issues a token
        like ``POST /api/guest`` does, and shares its per-address bucket)."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            refused = self._take(kind, self.address(request))
            if refused is not None:
                return refused
            return await handler(request)

        return guarded

    def _error(self, exc: ProtocolError) -> web.Response:
        if exc.code == ErrorCode.RATE_LIMITED:
            self.metrics.refused("login_failures" if exc.message.startswith("too many failed")
                                 else "hashes_per_address")
        self.metrics.error(exc.code)
        return error_response(exc)

    def add_to(self, app: web.Application) -> None:
        app.router.add_post("/api/register", self.register)
        app.router.add_post("/api/login", self.login)
        app.router.add_post("/api/guest", self.guest)
        app.router.add_post("/api/logout", self.logout)
        app.router.add_get("/api/me", self.me)
        app.router.add_get("/api/tables", self.tables)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_post("/api/password", self.password)
        app.router.add_get("/readyz", self.readyz)
        app.router.add_get("/metrics", self.metrics_page)

    async def register(self, request: web.Request) -> web.Response:
        address = self.address(request)
        refused = self._take("register", address)
        if refused is not None:
            return refused
        try:
            body = await json_body(request, self.settings.http_body_timeout)
            issued = await self.accounts.register(body.get("name"), body.get("password"),
                                                  address)
        except ProtocolError as exc:
            return self._error(exc)
        return web.json_response(issued.to_dict(), status=201)

    async def login(self, request: web.Request) -> web.Response:
        address = self.address(request)
        refused = self._take("login", address)
        if refused is not None:
            return refused
        try:
            body = await json_body(request, self.settings.http_body_timeout)
            issued = await self.accounts.login(body.get("name"), body.get("password"), address)
        except ProtocolError as exc:
            return self._error(exc)
        return web.json_response(issued.to_dict())

    async def guest(self, request: web.Request) -> web.Response:
        refused = self._take("guest", self.address(request))
        if refused is not None:
            return refused
        try:
            issued = await self.accounts.guest()
        except ProtocolError as exc:
            return self._error(exc)
        return web.json_response(issued.to_dict())

    async def password(self, request: web.Request) -> web.Response:
        """Change an account's password: every token of the account ends (its sockets close
        with 4001 on every node) and a fresh token is returned."""
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            return self._error(AccountError(ErrorCode.UNAUTHORIZED, "no valid bearer token"))
        address = self.address(request)
        refused = self._take("login", address)
        if refused is not None:
            return refused
        try:
            body = await json_body(request, self.settings.http_body_timeout)
            issued = await self.accounts.change_password(
                token, body.get("password"), body.get("new_password"), address)
        except ProtocolError as exc:
            return self._error(exc)
        return web.json_response(issued.to_dict())

    async def logout(self, request: web.Request) -> web.Response:
        token = bearer_token(request.headers.get("Authorization"))
        if token is None or not await self.accounts.revoke(token):
            return self._error(AccountError(ErrorCode.UNAUTHORIZED, "no valid bearer token"))
        return web.Response(status=204)

    async def me(self, request: web.Request) -> web.Response:
        token = bearer_token(request.headers.get("Authorization"))
        identity = None if token is None else await self.accounts.resolve(token)
        if identity is None:
            return self._error(AccountError(ErrorCode.UNAUTHORIZED, "no valid bearer token"))
        seat = await self.persistence.seat_of(identity.player)
        return web.json_response({**identity.to_dict(), "seat": seat})

    async def tables(self, request: web.Request) -> web.Response:
        """A page of the lobby index: one Redis round trip, whatever the number of tables."""
        mode = request.query.get("mode") or None
        if mode is not None and mode not in LISTED_MODES:
            return error_response(ProtocolError(ErrorCode.BAD_FIELD, "unknown mode",
                                                field="mode"))
        values: dict[str, int] = {}
        for name, default, low, high in (("offset", 0, 0, MAX_LIST_OFFSET),
                                         ("limit", self.list_limit, 1, self.list_limit)):
            raw = request.query.get(name)
            try:
                value = default if raw is None else int(raw)
            except ValueError:
                value = low - 1
            if not low <= value <= high:
                return error_response(ProtocolError(
                    ErrorCode.BAD_FIELD, f"{name} must be an integer in {low}..{high}",
                    field=name))
            values[name] = value
        offset, limit = values["offset"], values["limit"]
        total, rows = await self.persistence.table_page_raw(mode, offset, limit)
        # The summaries are stored as JSON: spliced in as they are, not parsed again.
        body = b'{"tables":[' + b",".join(rows) + b'],"total":%d,"offset":%d}' % (total, offset)
        return web.Response(body=body, content_type="application/json")

    async def healthz(self, request: web.Request) -> web.Response:
        """Alive, and whether Redis answers (a liveness probe: never limited)."""
        ok = self.persistence.redis_up and await self.persistence.answers(timeout=1.0)
        return web.json_response(
            {"status": "ok" if ok else "unavailable", "redis": ok, "node": self.node_id},
            status=200 if ok else 503,
        )

    async def readyz(self, request: web.Request) -> web.Response:
        """Ready for new traffic: not draining, Redis answered its last check, and not busy
        (server/net/admission.py: the balancer sends new players elsewhere meanwhile)."""
        redis_ok = self.persistence.redis_up
        busy = self.busy()
        ready = redis_ok and not self.draining and not busy
        status = "ready" if ready else "draining" if self.draining else \
            "unavailable" if not redis_ok else "busy"
        return web.json_response({"status": status, "redis": redis_ok, "node": self.node_id,
                                  "busy": busy}, status=200 if ready else 503)

    async def metrics_page(self, request: web.Request) -> web.Response:
        if not self.metrics.enabled:
            return error_response(ProtocolError(ErrorCode.NOT_FOUND, "metrics are off"))
        # X-Node: which node answered (the workers of --workers share one port).
        return web.Response(body=self.metrics.render(),
                            headers={"Content-Type": CONTENT_TYPE_LATEST,
                                     "X-Node": self.node_id})

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
too_big                 413     the body is over the limit (server/http_middleware.py)
======================  ======  ============================================
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from server.accounts import AccountError, Accounts
from server.persistence import Persistence
from server.protocol.errors import ErrorCode, ProtocolError
from server.ws import bearer_token

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
    ErrorCode.CONFLICT: 409,
}


def error_response(exc: ProtocolError) -> web.Response:
    body: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.field is not None:
        body["field"] = exc.field
    return web.json_response({"error": body}, status=STATUS.get(ErrorCode(exc.code), 400))


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        raw = await request.read()
        data = json.loads(raw) if raw else {}
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError(ErrorCode.BAD_REQUEST, "the body must be a JSON object") from None
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.BAD_REQUEST, "the body must be a JSON object")
    return data


class AccountRoutes:
    def __init__(
        self, accounts: Accounts, persistence: Persistence, node_id: str, list_limit: int
    ) -> None:
        self.accounts = accounts
        self.persistence = persistence
        self.node_id = node_id
        self.list_limit = list_limit

    def add_to(self, app: web.Application) -> None:
        app.router.add_post("/api/register", self.register)
        app.router.add_post("/api/login", self.login)
        app.router.add_post("/api/guest", self.guest)
        app.router.add_post("/api/logout", self.logout)
        app.router.add_get("/api/me", self.me)
        app.router.add_get("/api/tables", self.tables)
        app.router.add_get("/healthz", self.healthz)

    async def register(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            issued = await self.accounts.register(body.get("name"), body.get("password"))
        except ProtocolError as exc:
            return error_response(exc)
        return web.json_response(issued.to_dict(), status=201)

    async def login(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            issued = await self.accounts.login(body.get("name"), body.get("password"))
        except ProtocolError as exc:
            return error_response(exc)
        return web.json_response(issued.to_dict())

    async def guest(self, request: web.Request) -> web.Response:
        try:
            issued = await self.accounts.guest()
        except ProtocolError as exc:
            return error_response(exc)
        return web.json_response(issued.to_dict())

    async def logout(self, request: web.Request) -> web.Response:
        token = bearer_token(request.headers.get("Authorization"))
        if token is None or not await self.accounts.revoke(token):
            return error_response(AccountError(ErrorCode.UNAUTHORIZED, "no valid bearer token"))
        return web.Response(status=204)

    async def me(self, request: web.Request) -> web.Response:
        token = bearer_token(request.headers.get("Authorization"))
        identity = None if token is None else await self.accounts.resolve(token)
        if identity is None:
            return error_response(AccountError(ErrorCode.UNAUTHORIZED, "no valid bearer token"))
        seat = await self.persistence.seat_of(identity.player)
        return web.json_response({**identity.to_dict(), "seat": seat})

    async def tables(self, request: web.Request) -> web.Response:
        listed = await self.persistence.listed_tables()
        mode = request.query.get("mode")
        if mode:
            listed = [t for t in listed if t.get("mode") == mode]
        listed.sort(key=lambda t: (t.get("status") != "open", -float(t.get("created_at", 0))))
        return web.json_response({"tables": listed[: self.list_limit], "total": len(listed)})

    async def healthz(self, request: web.Request) -> web.Response:
        ok = await self.persistence.ping()
        return web.json_response(
            {"status": "ok" if ok else "unavailable", "redis": ok, "node": self.node_id},
            status=200 if ok else 503,
        )

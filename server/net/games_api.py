"""Finished games over HTTP: a player's history, a game's record for a replay, its ``.mat``
download, and how many players are online (docs/http-api.md, "Games" and "Online").

==========================================  =================================================
``GET /api/players/{player}/games``         a page of the player's games, newest first
``GET /api/games/{game_id}``                the record: events in the full form, chat
``GET /api/games/{game_id}/mat``            the game (``?match=1``: its match) as ``.mat``
``GET /api/online``                         ``{players}`` connected over the live nodes
==========================================  =================================================

Who may see a game is :func:`server.protocol.visibility.may_see`, decided on the record's
stored meta (read with its bytes, in the same round trip): a private room's game only by its
own players, a private tournament's by its players and its runner (a request carrying one of
their players' bearer tokens, or the runner's key); anyone else gets 404 ``no_such_game``, as
for a game nobody kept. A player's history lists their unlisted games to themself only. The
store is ``server/store/games.py``; the record's shape ``server/tables/records.py``.

The record and ``.mat`` routes answer with bytes stored at the game's end (the record gzip
JSON: sent as it is to a client that accepts gzip, else decompressed; see
``server/store/record_bytes.py``): no per-request encoding on the event loop. They, and the
review route, draw on the caller's cost budget (``server/net/cost_gate.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from server.cost_budget import COSTS, record_cost
from server.net.cost_gate import EXPECTED_RECORD, CostGate
from server.net.http_api import error_response
from server.net.public_params import check_game_id, parse_games, parse_match_flag
from server.net.ws import bearer_token
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.visibility import ANYONE, Viewer, may_see, sees_hidden_rows
from server.store.accounts import Accounts
from server.store.games import GameRecords, ServedMeta
from server.store.record_bytes import accepts_gzip, gunzip_bytes, is_gzip

RunnerOf = Callable[[str], Awaitable[str | None]]
"""The name of the runner whose key a bearer token is (None: not a live runner key)."""

INLINE_GUNZIP = 32 * 1024
"""Compressed answers up to this size are decompressed on the event loop (tens of
microseconds); bigger ones in a thread (zlib lets go of the GIL)."""


async def served_bytes(request: web.Request, gzipped: bytes, *,
                       content_type: str = "application/json",
                       headers: dict[str, str] | None = None) -> web.Response:
    """An answer stored as gzip (JSON unless ``content_type`` says otherwise): as it is
    (``Content-Encoding: gzip``) to a client that accepts gzip, decompressed to any other."""
    headers = {**(headers or {}), "Vary": "Accept-Encoding"}
    charset = "utf-8" if content_type.startswith("text/") else None
    if accepts_gzip(request.headers.get("Accept-Encoding")):
        headers["Content-Encoding"] = "gzip"
        return web.Response(body=gzipped, content_type=content_type, charset=charset,
                            headers=headers)
    body = (gunzip_bytes(gzipped) if len(gzipped) <= INLINE_GUNZIP
            else await asyncio.to_thread(gunzip_bytes, gzipped))
    return web.Response(body=body, content_type=content_type, charset=charset,
                        headers=headers)


class GameRoutes:
    """The routes of the table above, on one app. The record, ``.mat`` and review routes
    draw on the caller's cost budget (``gate``); ``runner_of`` tells a runner's key (none:
    no request is a runner)."""

    def __init__(self, records: GameRecords, accounts: Accounts, gate: CostGate,
                 runner_of: RunnerOf | None = None) -> None:
        self.records = records
        self.accounts = accounts
        self.gate = gate
        self.runner_of = runner_of

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/players/{player}/games", self.games)
        app.router.add_get("/api/games/{game_id}", self.game)
        app.router.add_get("/api/games/{game_id}/mat", self.mat)
        app.router.add_get("/api/online", self.online)

    async def _viewer(self, request: web.Request) -> Viewer:
        """Who the request's bearer token says it is: a runner (a runner key), a player (a
        player's token), else anyone."""
        token = bearer_token(request.headers.get("Authorization"))
        if not token:
            return ANYONE
        if self.runner_of is not None:
            runner = await self.runner_of(token)
            if runner is not None:
                return Viewer(runner=runner)
        identity = await self.accounts.resolve(token)
        return ANYONE if identity is None else Viewer(player=identity.player)

    async def games(self, request: web.Request) -> web.Response:
        try:
            query = parse_games(request.match_info["player"], request.query)
        except ProtocolError as exc:
            return error_response(exc)
        hidden_too = sees_hidden_rows(query.player, await self._viewer(request))
        total, rows = await self.records.page(query.player, offset=query.offset,
                                              limit=query.limit, private=hidden_too)
        return web.json_response({"player": query.player, "total": total,
                                  "offset": query.offset, "games": rows})

    async def _may_see(self, request: web.Request, meta: ServedMeta | None) -> ServedMeta:
        """``meta`` when the request may see its game; else ProtocolError (404, as for a game
        nobody kept). The token is looked at only for a game not everyone sees."""
        if meta is not None and not meta.audience.listed and \
                not may_see(meta.audience, meta.players, await self._viewer(request)):
            meta = None
        if meta is None:
            raise ProtocolError(ErrorCode.NO_SUCH_GAME,
                                f"no finished game {request.match_info['game_id']!r}",
                                field="game_id")
        return meta

    async def _fields(self, request: web.Request, *fields: str
                      ) -> tuple[ServedMeta, list[bytes | None]]:
        """The stored ``fields`` of the game asked for, if the request may see it."""
        game_id = check_game_id(request.match_info["game_id"])
        found = await self.records.served_fields(game_id, *fields)
        meta = await self._may_see(request, None if found is None else found[0])
        assert found is not None
        return meta, found[1]

    async def game(self, request: web.Request) -> web.StreamResponse:
        game_id = request.match_info["game_id"]
        upfront = self.gate.expected(game_id, EXPECTED_RECORD)
        refused = self.gate.admit(request, upfront)
        if refused is not None:
            return refused
        try:
            served = await self.records.served(check_game_id(game_id))
            await self._may_see(request, None if served is None else served.meta)
        except ProtocolError as exc:
            return error_response(exc)
        assert served is not None
        response = await served_bytes(request, served.body)
        sent = len(response.body) if isinstance(response.body, bytes) else len(served.body)
        cost = record_cost(sent, decompressed="Content-Encoding" not in response.headers)
        self.gate.remember(game_id, cost)
        self.gate.charge(request, cost - upfront)
        return response

    async def mat(self, request: web.Request) -> web.StreamResponse:
        refused = self.gate.admit(request, COSTS["mat"])
        if refused is not None:
            return refused
        try:
            whole_match = parse_match_flag(request.query)
            meta, (mat_game, mat_match) = await self._fields(request, "mat_game", "mat_match")
        except ProtocolError as exc:
            return error_response(exc)
        text = (mat_match if whole_match else None) or mat_game or b""
        headers = {"Content-Disposition": f'attachment; filename="{meta.game_id}.mat"'}
        if is_gzip(text):  # stored gzip (a long text)
            return await served_bytes(request, text, content_type="text/plain",
                                      headers=headers)
        return web.Response(body=text, content_type="text/plain", charset="utf-8",
                            headers=headers)

    async def online(self, request: web.Request) -> web.Response:
        return web.json_response({"players": await self.records.online()})

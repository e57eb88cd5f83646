"""Finished games over HTTP: a player's history, a game's record for a replay, its ``.mat``
download, and how many players are online (docs/http-api.md, "Games" and "Online").

==========================================  =================================================
``GET /api/players/{player}/games``         a page of the player's games, newest first
``GET /api/games/{game_id}``                the record: events in the full form, chat
``GET /api/games/{game_id}/mat``            the game (``?match=1``: its match) as ``.mat``
``GET /api/online``                         ``{players}`` connected over the live nodes
==========================================  =================================================

A private game is shown only to its own players: a request carrying one of their bearer
tokens. The store is ``server/store/games.py``; the record's shape ``server/tables/records.py``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from server.net.http_api import error_response
from server.net.public_params import check_game_id, parse_games, parse_match_flag
from server.net.ws import bearer_token
from server.protocol.errors import ErrorCode, ProtocolError
from server.store.accounts import Accounts
from server.store.games import GameRecords
from server.tables.records import is_private, replay_events

HIDDEN = ("mat_game", "mat_match")
"""Record fields kept for the download, not sent with the record."""


def record_body(record: dict[str, Any]) -> dict[str, Any]:
    """The record as ``GET /api/games/{game_id}`` answers it (events in the full form)."""
    body = {k: v for k, v in record.items() if k not in HIDDEN and k != "events"}
    body["events"] = replay_events(record.get("events") or ())
    return body


class GameRoutes:
    """The routes of the table above, on one app."""

    def __init__(self, records: GameRecords, accounts: Accounts) -> None:
        self.records = records
        self.accounts = accounts

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/players/{player}/games", self.games)
        app.router.add_get("/api/games/{game_id}", self.game)
        app.router.add_get("/api/games/{game_id}/mat", self.mat)
        app.router.add_get("/api/online", self.online)

    async def _viewer(self, request: web.Request) -> str | None:
        """The player whose bearer token the request carries (None: none, or not valid)."""
        token = bearer_token(request.headers.get("Authorization"))
        if not token:
            return None
        identity = await self.accounts.resolve(token)
        return None if identity is None else identity.player

    async def games(self, request: web.Request) -> web.Response:
        try:
            query = parse_games(request.match_info["player"], request.query)
        except ProtocolError as exc:
            return error_response(exc)
        own = await self._viewer(request) == query.player
        total, rows = await self.records.page(query.player, offset=query.offset,
                                              limit=query.limit, private=own)
        return web.json_response({"player": query.player, "total": total,
                                  "offset": query.offset, "games": rows})

    async def _record(self, request: web.Request) -> dict[str, Any]:
        """The record asked for, if the request may see it; else ProtocolError."""
        game_id = check_game_id(request.match_info["game_id"])
        record = await self.records.load(game_id)
        if record is not None and is_private(record):
            viewer = await self._viewer(request)
            if viewer is None or viewer not in record["players"]:
                record = None
        if record is None:
            raise ProtocolError(ErrorCode.NO_SUCH_GAME, f"no finished game {game_id!r}",
                                field="game_id")
        return record

    async def game(self, request: web.Request) -> web.Response:
        try:
            record = await self._record(request)
        except ProtocolError as exc:
            return error_response(exc)
        return web.json_response(record_body(record))

    async def mat(self, request: web.Request) -> web.Response:
        try:
            whole_match = parse_match_flag(request.query)
            record = await self._record(request)
        except ProtocolError as exc:
            return error_response(exc)
        text = (record.get("mat_match") if whole_match else None) or record.get("mat_game") or ""
        return web.Response(text=text, content_type="text/plain", charset="utf-8", headers={
            "Content-Disposition": f'attachment; filename="{record["game_id"]}.mat"'})

    async def online(self, request: web.Request) -> web.Response:
        return web.json_response({"players": await self.records.online()})

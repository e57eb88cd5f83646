"""``GET /api/games/{game_id}/review``: the review of a finished game (docs/http-api.md,
"Games"; the review itself is :func:`server.bot.review.review_events`, pure).

The record comes from the finished-game store with the same access rule as
``GET /api/games/{game_id}`` (this class is :class:`~server.net.games_api.GameRoutes`
with only this route: a private game only for its own players; anyone else, or no such
game: 404 ``no_such_game``). A review takes up to a second of CPU: it runs in a thread, at
most ``MAX_RUNNING`` at once per node, and the answers for the last ``CACHE_SIZE`` games
are kept (a finished game's review never changes).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from aiohttp import web

from server.bot.review import review_events
from server.net.games_api import GameRoutes
from server.net.http_api import error_response
from server.protocol.errors import ErrorCode, ProtocolError
from server.store.accounts import Accounts
from server.store.games import GameRecords
from server.tables.records import replay_events

log = logging.getLogger(__name__)

MAX_RUNNING = 2
CACHE_SIZE = 256


class ReviewRoute(GameRoutes):
    def __init__(self, records: GameRecords, accounts: Accounts) -> None:
        super().__init__(records, accounts)
        self._running = asyncio.Semaphore(MAX_RUNNING)
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/games/{game_id}/review", self.review)

    async def review(self, request: web.Request) -> web.Response:
        try:
            record = await self._record(request)
        except ProtocolError as exc:
            return error_response(exc)
        game_id = str(record["game_id"])
        body = self._cache.get(game_id)
        if body is None:
            events = replay_events(record.get("events") or ())
            try:
                async with self._running:
                    result = await asyncio.get_running_loop().run_in_executor(
                        None, review_events, events)
            except ValueError:
                log.exception("game %s: its events do not replay for a review", game_id)
                return error_response(ProtocolError(ErrorCode.INTERNAL,
                                                    "this game cannot be reviewed"))
            body = {"game_id": game_id, "player_ids": list(record.get("players") or ()),
                    "names": list(record.get("names") or ()), **result}
            self._cache[game_id] = body
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(game_id)
        return web.json_response(body)

"""``GET /api/games/{game_id}/review``: the review of a finished game (docs/http-api.md,
"Games"; the review itself is :func:`server.bot.review.review_events`, pure).

The record comes from the finished-game store with the same access rule as
``GET /api/games/{game_id}`` (a private game only for its own players; anyone else, or
no such game: 404 ``no_such_game``): ``record_for`` is that route's own lookup. A review
takes up to a second or two of CPU: it runs in a thread, at most ``MAX_RUNNING`` at once
per node, and the answers of the last ``CACHE_SIZE`` games are kept (a finished game's
review never changes).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from server.bot.review import review_events
from server.net.http_api import error_response
from server.protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger(__name__)

MAX_RUNNING = 2
CACHE_SIZE = 256

RecordFor = Callable[[web.Request], Awaitable[dict[str, Any]]]


class ReviewRoute:
    def __init__(self, record_for: RecordFor,
                 events_of: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
        self.record_for = record_for
        self.events_of = events_of
        self._running = asyncio.Semaphore(MAX_RUNNING)
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/games/{game_id}/review", self.review)

    async def review(self, request: web.Request) -> web.Response:
        try:
            record = await self.record_for(request)
        except ProtocolError as exc:
            return error_response(exc)
        game_id = str(record["game_id"])
        body = self._cache.get(game_id)
        if body is None:
            events = self.events_of(record)
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

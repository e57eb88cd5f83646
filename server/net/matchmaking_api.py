"""``GET /api/matchmaking``: players waiting per pool, and the window curve
(:meth:`server.lobby.matchmaker.Matchmaker.overview`)."""

from __future__ import annotations

from aiohttp import web
from redis.exceptions import RedisError

from server.lobby.matchmaker import Matchmaker
from server.protocol.errors import UNAVAILABLE_MESSAGE, ErrorCode, ProtocolError, http_error_body

__all__ = ["MatchmakingRoute"]


class MatchmakingRoute:
    """The matchmaking overview over HTTP (503 while Redis is away)."""

    def __init__(self, matchmaker: Matchmaker) -> None:
        self.matchmaker = matchmaker

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/matchmaking", self.overview)

    async def overview(self, request: web.Request) -> web.Response:
        try:
            body = await self.matchmaker.overview()
        except (RedisError, OSError):
            return web.json_response(http_error_body(ProtocolError(
                ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE)), status=503)
        return web.json_response(body)

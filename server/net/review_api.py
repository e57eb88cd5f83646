"""``GET /api/games/{game_id}/review``: the review of a finished game (docs/http-api.md,
"Games"; the review itself is :func:`server.bot.review.review_events`, pure).

The record comes from the finished-game store with the same access rule as
``GET /api/games/{game_id}`` (:func:`server.protocol.visibility.may_see`: a private room's
game only for its own players, a private tournament's for its players and runner; anyone
else, or no such game: 404 ``no_such_game``). A review is computed once per game, in a
worker process (:class:`server.net.review_jobs.ReviewJobs`: concurrent requests share one
computation, the queue is bounded, abandoned work is dropped), and its answer is kept beside
the record (gzip JSON, as long as the record): every later request, on any node, is served
those bytes.
Each request draws on the caller's cost budget (:mod:`server.net.cost_gate`): a computed
review costs far more than a kept one.
"""

from __future__ import annotations

import logging

from aiohttp import web

from server.cost_budget import COSTS
from server.net.cost_gate import CostGate
from server.net.games_api import GameRoutes, RunnerOf, served_bytes
from server.net.http_api import error_response
from server.net.review_jobs import Abandoned, ReviewJobs
from server.protocol.errors import ErrorCode, ProtocolError, retry_later
from server.store.accounts import Accounts
from server.store.games import GameRecords

log = logging.getLogger(__name__)


class ReviewRoute(GameRoutes):
    def __init__(self, records: GameRecords, accounts: Accounts, gate: CostGate,
                 jobs: ReviewJobs, runner_of: RunnerOf | None = None) -> None:
        super().__init__(records, accounts, gate, runner_of)
        self.jobs = jobs

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/games/{game_id}/review", self.review)

    async def review(self, request: web.Request) -> web.StreamResponse:
        refused = self.gate.admit(request, COSTS["review_cached"])
        if refused is not None:
            return refused
        try:
            meta, (kept,) = await self._fields(request, "review")
        except ProtocolError as exc:
            return error_response(exc)
        game_id = meta.game_id
        if kept is not None:
            return await served_bytes(request, kept)
        if not self.jobs.has_room(game_id):
            self.gate.metrics.refused("review_queue")
            self.gate.metrics.error(ErrorCode.BUSY)
            return error_response(retry_later(ProtocolError(
                ErrorCode.BUSY, "too many reviews are being computed; retry later"),
                self.jobs.retry_after()))
        # The request that starts the computation pays for it; one joining it, little.
        if not self.jobs.is_running(game_id):
            self.gate.charge(request, COSTS["review"] - COSTS["review_cached"])

        async def head() -> tuple[bytes, int] | None:
            found = await self.records.served_fields(game_id, "body")
            if found is None or found[1][0] is None:
                return None
            return found[1][0], found[0].head_len

        async def keep(answer: bytes) -> object:
            return await self.records.keep(game_id, "review", answer)

        def abandoned() -> bool:
            transport = request.transport
            return transport is None or transport.is_closing()

        try:
            answer = await self.jobs.result(game_id, head, keep, abandoned)
        except Abandoned:
            return web.Response(status=499)  # nobody reads it
        except ValueError:
            log.exception("game %s: its events do not replay for a review", game_id)
            return error_response(ProtocolError(ErrorCode.INTERNAL,
                                                "this game cannot be reviewed"))
        if answer is None:
            return error_response(ProtocolError(ErrorCode.NO_SUCH_GAME,
                                                f"no finished game {game_id!r}",
                                                field="game_id"))
        return await served_bytes(request, answer)

"""Overload refused at the door: while the node is busy (:class:`server.net.load.LoadMeter`),
new work is refused with ``busy`` and ``retry_after``; the games in progress go on.

What counts as new work, in one place:

- over WebSocket, :data:`NEW_WORK`: ``create_table``, ``join`` (except a player's own seat:
  that is a reconnect), ``queue`` (matchmaking) and ``play_computer``. The reply is the
  ``error`` message with code ``busy`` and ``retry_after`` (PROTOCOL.md);
- over HTTP, :data:`HEAVY_ROUTES`: the finished-game reads (record (the replay reads it), ``.mat``,
  review), answered 503 ``busy`` with ``Retry-After`` by :meth:`Admission.middleware`
  before their handler runs. They are optional and costly: refused as soon as the node is
  *strained* (a load reading over its limit now), without waiting for it to turn busy.

Never refused for load: moves, rolls, the cube, resigning, chat, sync, leave, watch, a
seated player's join or reconnect, cancelling a queue entry, and every other route.
``/readyz`` answers 503 ``busy`` meanwhile (server/net/http_api.py), so a balancer sends new
players to other nodes. Each refusal is counted in ``table42_busy_refusals_total{kind}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from server.metrics import Metrics
from server.net.load import LoadMeter
from server.protocol.errors import ErrorCode, ProtocolError, http_error_body, retry_later
from server.protocol.messages import CreateTable, Join, JoinQueue, Message, PlayComputer

BUSY_MESSAGE = "this node is busy: new games and heavy reads are refused for now; retry later"

NEW_WORK: dict[type[Message], str] = {
    CreateTable: "create_table",
    Join: "join",
    JoinQueue: "queue",
    PlayComputer: "play_computer",
}
"""The WebSocket messages that start new work, by the kind they are counted under."""

HEAVY_ROUTES: dict[str, str] = {
    "/api/games/{game_id}": "record",
    "/api/games/{game_id}/mat": "mat",
    "/api/games/{game_id}/review": "review",
}
"""The HTTP routes (as registered) refused while busy, by the kind they are counted under."""

SeatOf = Callable[[str], Awaitable[str | None]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Admission:
    """Decides, from ``meter``, whether new work is let in; counts refusals in ``metrics``.
    ``seat_of`` (a player's table, or None) tells a seated player's join (let in) from a new
    one; it is asked only while the node is busy."""

    def __init__(self, meter: LoadMeter, metrics: Metrics, *,
                 seat_of: SeatOf | None = None) -> None:
        self.meter = meter
        self.metrics = metrics
        self._seat_of = seat_of

    def refusal(self, kind: str, *, strained: bool = False) -> ProtocolError | None:
        """The ``busy`` refusal of new work of ``kind`` (counted), or None when let in;
        ``strained``: refused as soon as the node is strained, not only when busy."""
        meter = self.meter
        if not (meter.strained() if strained else meter.busy()):
            return None
        self.metrics.busy_refusals.labels(kind).inc()
        self.metrics.error(ErrorCode.BUSY)
        return retry_later(ProtocolError(ErrorCode.BUSY, BUSY_MESSAGE), meter.retry_after())

    def with_seats(self, seat_of: SeatOf) -> Admission:
        """The same door (its meter and metrics) that reads players' seats with ``seat_of``
        (the sockets' door: the HTTP one, made before the store, reads none)."""
        return Admission(self.meter, self.metrics, seat_of=seat_of)

    async def message_refusal(self, player: str | None, message: Message) -> ProtocolError | None:
        """The refusal of a WebSocket message of :data:`NEW_WORK`, or None when let in."""
        if not self.meter.busy():
            return None
        kind = NEW_WORK.get(type(message))
        if kind is None:
            return None
        if isinstance(message, Join) and player is not None and self._seat_of is not None \
                and await self._seat_of(player) == message.table:
            return None  # their own seat: a reconnect, never refused
        return self.refusal(kind)

    def middleware(self) -> Middleware:
        """The aiohttp middleware refusing :data:`HEAVY_ROUTES` while the node is strained
        (one check per request; the route look-up only while strained)."""
        meter = self.meter

        @web.middleware
        async def admission(request: web.Request, handler: Handler) -> web.StreamResponse:
            if meter.strained():
                info = request.match_info
                route = getattr(info, "route", None)
                resource = getattr(route, "resource", None)
                kind = HEAVY_ROUTES.get(resource.canonical) if resource is not None else None
                if kind is not None and request.method in ("GET", "HEAD"):
                    refused = self.refusal(kind, strained=True)
                    if refused is not None:
                        return web.json_response(
                            http_error_body(refused), status=503,
                            headers={"Retry-After": str(refused.retry_after)})
            return await handler(request)

        return admission

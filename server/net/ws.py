"""The WebSocket endpoint (``GET /ws``): the thin shell around
:class:`server.protocol.session.Session`.

It moves frames: each data frame goes to the session (rate limit, format, decoding,
validation, auth gating), accepted messages go to the lobby, refusals go back as ``error``
events. Authentication comes from ``Authorization: Bearer <token>`` on the upgrade request
(bots) or from a first ``hello`` message (browsers); the player's identity comes only from the
token. A bad header token is refused before the upgrade with HTTP 401.

Limits set here: ``max_msg_size`` (a bigger frame closes the socket with 1009),
``heartbeat`` (ping/pong: the node's tick pings silent sockets, ``server/net/heartbeat.py``;
the reader notes each frame and answers pings), ``auth_timeout`` (1008 if no valid
``hello`` in time), no compression and no writer-side flow control (the hub drops slow
consumers instead).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web
from redis.exceptions import RedisError

from server.config import Settings
from server.lobby.lobby import Lobby
from server.lobby.matchmaker import Matchmaker
from server.lobby.ports import Handle
from server.lobby.refusals import error_reply, store_away
from server.net.addresses import client_address
from server.net.admission import NEW_WORK as REFUSED_WHEN_BUSY
from server.net.admission import Admission
from server.net.connection import Connection, Hub
from server.net.socket_moves import SocketMoves
from server.protocol.codec import Outgoing, WireFormat
from server.protocol.errors import (
    ErrorCode,
    ProtocolError,
    error_message,
    http_error_body,
    retry_later,
)
from server.protocol.lean import PROTOCOL_LEAN, PROTOCOLS
from server.protocol.messages import (
    MATCHMAKING_MESSAGES,
    MESSAGE_TYPES,
    Hello,
    Join,
    PlayComputer,
    TableMessage,
)
from server.protocol.session import Accepted, CloseConnection, Refused, Session, SessionLimits
from server.store.accounts import Accounts, Identity
from server.tables.machine import HOLD_RETRY_AFTER

if TYPE_CHECKING:
    from server.lobby.computer import ComputerOpponents

log = logging.getLogger(__name__)

CLOSE_POLICY_VIOLATION = 1008
CLOSE_TRY_AGAIN_LATER = 1013
DEFAULT_PROTOCOL = PROTOCOL_LEAN
"""The table-event form of a socket that does not say (PROTOCOL.md §5.1)."""
NEW_WORK = frozenset(REFUSED_WHEN_BUSY)
"""The messages a busy node may refuse (server/net/admission.py): they take the chain of
checks below, where the door is; moves never do."""
TO_LOBBY = frozenset(MESSAGE_TYPES) - {Hello, PlayComputer, *MATCHMAKING_MESSAGES, *NEW_WORK}
"""The messages of an authenticated socket that always go to the lobby (moves among them):
one set look-up instead of the chain of checks the others go through."""
WRITER_LIMIT = 1 << 62
"""aiohttp awaits a drain after this many bytes; effectively never (see connection.py)."""


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def requested_protocol(value: str | None) -> int:
    """The event form asked for with ``?protocol=`` (1 or 2); the server's default otherwise."""
    if value is not None and value.strip().isdigit() and int(value) in PROTOCOLS:
        return int(value)
    return DEFAULT_PROTOCOL


def session_limits(settings: Settings) -> SessionLimits:
    return SessionLimits(
        rate=settings.rate_limit,
        burst=settings.rate_burst,
        flood_close_after=settings.flood_close_after,
        auth_timeout=settings.auth_timeout,
    )


def welcome_message(identity: Identity, conn: Connection, settings: Settings,
                    muted: Iterable[str] = (), ref: Any = None, *,
                    now: float) -> dict[str, Any]:
    return {
        "type": "welcome",
        "ref": ref,
        **identity.to_dict(),
        "format": str(conn.format),
        "protocol": conn.session.protocol,
        "keepalive": conn.keepalive,
        "node": settings.node_id,
        "server_time": now,
        "limits": {
            "max_msg_size": settings.max_msg_size,
            "rate_limit": settings.rate_limit,
            "rate_burst": settings.rate_burst,
            "sync_events_per_message": settings.sync_events_per_message,
            "decision_time": settings.decision_time,
            "max_strikes": settings.max_strikes,
            "grace_period": settings.grace_period,
            "max_match_length": settings.max_match_length,
            "chat_max_length": settings.chat_max_length,
            "chat_rate": settings.chat_rate,
            "chat_window": settings.chat_window,
            "socket_watch_max": settings.socket_watch_max,
        },
        "muted": sorted(muted),
    }


class SocketHandler:
    """Serves ``/ws``; one instance per application."""

    def __init__(self, settings: Settings, accounts: Accounts, lobby: Lobby, hub: Hub,
                 matchmaker: Matchmaker | None = None,
                 computer: ComputerOpponents | None = None, *,
                 admission: Admission | None = None,
                 moves: SocketMoves | None = None) -> None:
        """``admission``: the door refusing new work while the node is busy (None: none);
        ``moves``: the hand-over of sockets between sibling workers (None: none)."""
        self.settings = settings
        self.accounts = accounts
        self.lobby = lobby
        self.hub = hub
        self.matchmaker = matchmaker
        self.computer = computer
        self.admission = admission
        self.limits = session_limits(settings)
        self._trusted = settings.trusted_networks
        self.moves = moves
        if moves is not None:
            moves.serve = self.serve_moved
            moves.forget = self._forget

    async def handle(self, request: web.Request) -> web.StreamResponse:
        settings = self.settings
        live: tuple[Identity, str, float | None] | None = None
        address = client_address(
            request.remote, request.headers.get("X-Forwarded-For"), self._trusted
        )
        if settings.limits and \
                self.hub.address_count(address) >= settings.max_sockets_per_address and \
                not (self.computer is not None and self.computer.owns_token(
                    bearer_token(request.headers.get("Authorization")))):
            self.lobby.metrics.refused("sockets_per_address")
            return web.json_response(http_error_body(ProtocolError(
                ErrorCode.RATE_LIMITED,
                f"at most {settings.max_sockets_per_address} sockets per address")),
                status=429, headers={"Retry-After": "10"},
            )
        # The place is taken before the first await (the token look-up, the upgrade), so
        # concurrent upgrades from one address cannot all pass the check above.
        self.hub.reserve_address(address)
        try:
            token = bearer_token(request.headers.get("Authorization"))
            if token is not None:
                try:
                    live = await self.accounts.resolve_live(token) \
                        if self.lobby.persistence.redis_up else None
                except (RedisError, OSError) as exc:
                    log.warning("bearer token not checked: %s", exc)
                    self.lobby.persistence.redis_up = False
                if not self.lobby.persistence.redis_up:
                    self.hub.release_address(address)
                    return web.json_response(
                        http_error_body(store_away()), status=503,
                        headers={"Retry-After": str(HOLD_RETRY_AFTER)})
                if live is None:
                    self.hub.release_address(address)
                    return web.json_response(http_error_body(ProtocolError(
                        ErrorCode.AUTH_FAILED, "unknown or expired token")), status=401)
            fmt = WireFormat.MSGPACK if request.query.get("format") == "msgpack" \
                else WireFormat.JSON
            # No heartbeat timer per socket and no automatic ping answers: the node's tick
            # pings silent sockets (server/net/heartbeat.py), and _serve notes every frame.
            ws = web.WebSocketResponse(
                autoping=False,
                max_msg_size=settings.max_msg_size,
                compress=False,
                writer_limit=WRITER_LIMIT,
            )
            await ws.prepare(request)
        except BaseException:
            self.hub.release_address(address)
            raise
        clock = self.hub.clock
        opened = clock.monotonic()
        session = Session(self.limits, now=opened, fmt=fmt,
                          protocol=requested_protocol(request.query.get("protocol")))
        conn = Connection(ws, session, address, request.transport, now=opened,
                          delivered_ids=settings.socket_delivered_ids)
        conn.keepalive = request.query.get("keepalive") in ("1", "true")
        if self.moves is not None:
            self.moves.wrap(conn, request.transport)
        self.hub.add(conn)
        metrics = self.lobby.metrics
        metrics.connections.inc()
        metrics.connections_opened.inc()
        auth_timer: Handle | None = None
        try:
            if live is not None:
                if not await self._authenticate(conn, live, None):
                    return ws
            else:
                auth_timer = clock.call_later(
                    settings.auth_timeout, self._auth_expired, conn
                )
            await self._serve(conn)
        finally:
            if auth_timer is not None:
                auth_timer.cancel()
            await self._forget(conn)
        return ws

    async def serve_moved(self, conn: Connection) -> None:
        """Serve a socket a sibling worker handed over (``socket_moves.py``) until it
        closes."""
        try:
            await self._serve(conn)
        finally:
            await self._forget(conn)

    async def _forget(self, conn: Connection) -> None:
        """The socket closed (or went to a sibling worker): forget it, and tell the lobby
        and the matchmaker."""
        self.lobby.metrics.connections.dec()
        conn.session.close()
        try:
            remaining = self.hub.remove(conn)
            await self.lobby.on_disconnect(conn.id, conn.player, remaining=remaining,
                                           watched=conn.watching)
            # (a socket handed to a sibling keeps its player's ticket: it lives on there)
            if self.matchmaker is not None and conn.moved_to is None:
                await self.matchmaker.on_disconnect(conn.player)
        except Exception:
            log.exception("disconnect handling failed for %s", conn.player)

    def _auth_expired(self, conn: Connection) -> None:
        if not conn.session.is_ready and not conn.closed:
            self.lobby.spawn(conn.close(CLOSE_POLICY_VIOLATION, "authentication timed out"))

    async def _authenticate(self, conn: Connection, live: tuple[Identity, str, float | None],
                            ref: Any) -> bool:
        identity, digest, expires_in = live
        if self.hub.count(identity.player) >= self.settings.max_connections_per_player:
            err = ProtocolError(
                ErrorCode.TOO_MANY_CONNECTIONS,
                f"at most {self.settings.max_connections_per_player} sockets per player",
            )
            self._send(conn, error_message(err, ref))
            await conn.close(CLOSE_POLICY_VIOLATION, "too many connections")
            return False
        conn.session.authenticate(identity.player)
        actor = conn.authenticated(identity, self.settings.node_id)
        # Counted under its player before anything is awaited: concurrent sockets of one
        # player see each other, so the cap above holds.
        sockets_here = self.hub.bind(conn)
        # The socket ends with its token: at expiry (timer), or when it is revoked anywhere
        # (the revoke is broadcast to every node, see Accounts.announce_revoked).
        self.hub.bind_token(conn, digest, expires_in)
        muted = await self.lobby.chat_state(identity.player)
        self._send(conn, welcome_message(identity, conn, self.settings, muted, ref,
                                         now=self.hub.clock.now()))
        await self.lobby.on_connect(actor, first_here=sockets_here == 1)
        return True

    async def _store_away(self, conn: Connection, ref: Any) -> None:
        """Refuse a ``hello`` while Redis is away (its token cannot be checked): ``unavailable``
        with ``retry_after``, then a clean close (1013, try again later)."""
        err = store_away()
        self.lobby.metrics.error(err.code)
        self._send(conn, error_message(err, ref))
        await conn.close(CLOSE_TRY_AGAIN_LATER, "storage unavailable")

    async def _records_spent(self, conn: Connection, message: Any) -> ProtocolError | None:
        """The refusal of new work (``create_table``, ``join``, ``queue``, ``play_computer``)
        from an account or address whose finished games used its records' budget this hour
        (``server/store/record_budget.py``): ``rate_limited`` with ``retry_after``; None
        when let in (a seated player's join is a reconnect: always let in)."""
        lobby = self.lobby
        budget = lobby.record_budget
        identity = conn.identity
        if not budget.enabled or identity is None or identity.is_bot \
                or not lobby.persistence.redis_up:
            return None
        try:
            wait = await budget.wait(identity.player, conn.address)
            if wait is None or (isinstance(message, Join) and
                                await lobby.persistence.seat_of(identity.player)
                                == message.table):
                return None
        except (RedisError, OSError):
            return None  # the handler meets the outage and answers it
        lobby.metrics.refused("records_per_hour")
        lobby.metrics.error(ErrorCode.RATE_LIMITED)
        return retry_later(ProtocolError(
            ErrorCode.RATE_LIMITED, "this account or address finished as many games this hour "
            "as are recorded (records_per_hour); retry later"), wait)

    def _send(self, conn: Connection, message: dict[str, Any]) -> None:
        # Through the hub, so it is ordered with everything else pushed to the socket.
        self.hub.push(conn, Outgoing(message))

    async def _serve(self, conn: Connection) -> None:
        ws = conn.ws
        session = conn.session
        monotonic = self.hub.clock.monotonic
        lobby = self.lobby
        hub = self.hub
        receive = ws.receive
        judge = session.receive
        on_message = lobby.on_message
        text, binary = WSMsgType.TEXT, WSMsgType.BINARY
        while True:
            # Silent from here until a frame comes (server/net/heartbeat.py): any frame is an
            # answer, and a socket whose last frame is still being handled is not silent.
            conn.heard_at = monotonic()
            conn.parked = True
            msg = await receive()
            conn.parked = False
            conn.received += 1
            kind = msg.type
            if kind is text or kind is binary:
                outcome = judge(msg.data, binary=kind is binary, now=monotonic())
                if type(outcome) is Accepted:
                    message = outcome.message
                    if type(message) in TO_LOBBY and conn.actor is not None:
                        await on_message(conn.actor, message)
                    elif isinstance(message, Hello):
                        if message.protocol is not None:
                            session.use_protocol(message.protocol)
                            if conn.identity is not None:  # its actor carries the form
                                conn.authenticated(conn.identity, self.settings.node_id)
                        if message.keepalive is not None:
                            conn.keepalive = message.keepalive
                        live = None
                        if lobby.persistence.redis_up:
                            try:
                                live = await self.accounts.resolve_live(message.token)
                            except (RedisError, OSError) as exc:
                                log.warning("hello not checked: %s", exc)
                                lobby.persistence.redis_up = False
                        if not lobby.persistence.redis_up:
                            await self._store_away(conn, message.ref)
                            return
                        if live is None:
                            err = ProtocolError(ErrorCode.AUTH_FAILED,
                                                "unknown or expired token", field="token")
                            self._send(conn, error_message(err, message.ref))
                        elif not await self._authenticate(conn, live, message.ref):
                            return
                    elif conn.identity is None or conn.actor is None:  # ping before hello
                        self._send(conn, {"type": "pong", "ref": message.ref})
                    elif type(message) in NEW_WORK and self.admission is not None and \
                            (busy := await self.admission.message_refusal(
                                conn.player, message)) is not None:
                        table = message.table if isinstance(message, TableMessage) else None
                        self._send(conn, error_message(busy, message.ref, table))
                    elif type(message) in NEW_WORK and (
                            spent := await self._records_spent(conn, message)) is not None:
                        table = message.table if isinstance(message, TableMessage) else None
                        self._send(conn, error_message(spent, message.ref, table))
                    elif isinstance(message, MATCHMAKING_MESSAGES) and self.matchmaker is not None:
                        if not lobby.persistence.redis_up:  # as the lobby does (Redis outage)
                            self._send(conn, error_reply(
                                store_away(), message.ref, None, doing="queueing",
                                metrics=lobby.metrics))
                        else:
                            await self.matchmaker.on_message(conn.identity, conn.actor,
                                                             message)
                    elif isinstance(message, PlayComputer) and self.computer is not None:
                        await self.computer.on_message(conn.identity, conn.actor, message)
                    else:
                        await on_message(conn.actor, message)
                elif isinstance(outcome, Refused):
                    if outcome.error.code == ErrorCode.RATE_LIMITED:
                        lobby.metrics.refused("socket_messages")
                    hub.push(conn, Outgoing(error_reply(outcome.error, outcome.ref, None,
                                                        doing="reading a message",
                                                        metrics=lobby.metrics)))
                elif isinstance(outcome, CloseConnection):
                    await conn.close(outcome.code, outcome.reason)
                    return
            elif kind is WSMsgType.PING:  # (autoping is off: answered here)
                with contextlib.suppress(ConnectionError):  # (closing meanwhile)
                    await ws.pong(msg.data)
            elif kind in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED,
                          WSMsgType.ERROR):
                return

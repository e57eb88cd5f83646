"""Sockets handed between the workers of one machine, so a table and its players' sockets live
in one process.

With ``--workers N`` the kernel gives each new connection to any worker. A table is owned by
one of them; a seated player (or a watcher) whose socket another worker holds would send
every move across the local link and get every event back the same way. Instead the owner
*summons* the socket (``ops.Summon``, ``server/lobby/summons.py``: when the player sits down,
sends a command, or is attached there) and the worker holding it hands it over, at a frame
boundary, with its file descriptor:

1. **The boundary.** Every socket of a worker with siblings reads through a
   :class:`FrameShim` in front of aiohttp's parser: it follows the frames
   (:class:`~server.protocol.frames.FrameCursor`). To hand over, the shim *holds*: it stops
   passing bytes on at the next boundary outside a fragmented message, keeps what came after
   and stops reading. The hand-over waits until the socket's reader has handled every
   message before the boundary and waits for the next one (``Connection.parked``).
2. **Ask.** The holder sends ``move_ask`` over the local link, after every command that
   socket forwarded (the link keeps their order). The owner makes a socket ready: the same
   player, token, session, keep-alive and delivered inbox events, under a new id; what is
   addressed to the old place is written there from now on (``Delivery.arrived``); the
   player's seat counts this worker, without ``resume`` (the socket has every event), and no
   longer the old one when it was the player's last socket there; the tables it watches here
   know it by its new id. Frames for it are kept until the socket arrives. It answers
   ``move_ready`` (or refuses with an empty id: nothing changed).
3. **Hand-over.** Every event the owner sent before its answer has arrived before it (the
   link keeps order) and is written; the holder pushes nothing more to the socket, waits for
   its send buffer to empty into the kernel, and sends the descriptor (``SCM_RIGHTS``), with
   the bytes the shim held, in one datagram to the owner's Unix socket in the link folder.
   Then it drops its side without a close frame (the connection lives on in the owner) and
   forgets the socket as a closed one (its player counts one socket less there).
4. **Arrival.** The owner adopts the descriptor (``loop.connect_accepted_socket``), writes
   the frames it kept, feeds the held bytes to a parser of its own (aiohttp's, behind a
   shim again: the socket may move on later) and serves the socket like any other.

Before the ask, a socket that does not come to rest (a message still being handled after
``REST_WAIT``) stays where it is. After the ask, a step that fails (no answer in
``READY_WAIT``, a send buffer that does not empty in ``SEND_WAIT``, a datagram refused) closes
the socket with 1012 ``service restart``: the client reconnects and catches up (``sync``), as
after any restart; nothing is lost in between. A socket stays where it is while it watches a
table of another worker, while one of its requests waits for another worker's answer, while
the local link between the two is down (messages then go through Redis, out of order), or
when it is summoned to watch while its player is seated at any table (it follows the seat);
a seated player's socket goes only to the worker that has the seat (``move_ask``'s
``seated``, refused otherwise).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, cast

from aiohttp import EofStream, WSCloseCode, WSMessage, WSMsgType
from aiohttp._websocket.reader import WebSocketDataQueue
from aiohttp.http_websocket import WebSocketError, WebSocketReader

from server.config import Settings
from server.lobby.ports import NodeSender
from server.metrics import Metrics
from server.net.connection import Connection, Hub, writable
from server.protocol import node_messages as ops
from server.protocol.codec import WireFormat
from server.protocol.frames import FrameCursor, HeaderError
from server.protocol.node_messages import Actor
from server.protocol.session import Session, SessionLimits
from server.store.accounts import Identity

log = logging.getLogger(__name__)

__all__ = ["FrameShim", "MovedSocket", "SocketHomes", "SocketMoves", "post_path"]

REST_WAIT = 1.0
"""Seconds a summoned socket may take to come to rest (its reader waiting for a message)."""
READY_WAIT = 2.0
"""Seconds the holder waits for the owner's ``move_ready``."""
SEND_WAIT = 2.0
"""Seconds the holder waits for the socket's send buffer to empty, and for the owner's
datagram queue to take the descriptor."""
ARRIVE_WAIT = 10.0
"""Seconds the owner keeps a socket made ready for a descriptor that does not come."""
HELD_MAX = 128 * 1024
"""Bytes held past the boundary that a hand-over carries at most (else the socket stays)."""
DATAGRAM_BUFFER = 2 * HELD_MAX
CLOSE_SERVICE_RESTART = 1012
READ_CHUNK = 1 << 16


def post_path(link_dir: str, node_id: str) -> str:
    """The Unix datagram socket where worker ``node_id`` takes sockets handed to it."""
    return os.path.join(link_dir, f"move-{node_id}.sock")


class SocketHomes(Protocol):
    """What the hand-over asks of the lobby (:class:`~server.lobby.lobby.Lobby`)."""

    @property
    def closing(self) -> bool: ...

    def may_hand_over(self, conn_id: str, to: str) -> bool: ...

    def handed_over(self, conn_id: str) -> None: ...

    async def has_seat(self, player: str) -> bool: ...

    def summon_again(self, node: str, conn_id: str) -> None: ...

    def may_arrive(self, player: str, table_id: str, *, seated: bool) -> bool: ...

    def socket_arriving(self, old: Actor, new: Actor, table_id: str, watching: list[str], *,
                        last_there: bool) -> None: ...

    async def socket_arrived(self, actor: Actor, *, first_here: bool) -> None: ...


class FrameShim(asyncio.Protocol):
    """Sits between a socket's transport and its WebSocket parser (``inner``, aiohttp's
    protocol for a socket that upgraded here): passes every byte on, following the frames,
    until told to hold (see the module)."""

    def __init__(self, inner: asyncio.Protocol, transport: asyncio.Transport | None) -> None:
        self.inner = inner
        self.transport = transport
        self.cursor = FrameCursor()
        self.broken = False  # a header the cursor could not read: never handed over
        self.paused = False  # reading paused by the shim itself (holding)

    def data_received(self, data: bytes) -> None:
        if self.broken:
            self.inner.data_received(data)
            return
        try:
            passed = self.cursor.feed(data)
        except HeaderError:
            self.broken = True
            self.inner.data_received(data)
            return
        if passed == len(data):
            self.inner.data_received(data)
            return
        if passed:
            self.inner.data_received(data[:passed])
        if self.transport is not None:  # at rest, holding: read nothing more
            self.paused = True
            self.transport.pause_reading()

    def hold(self) -> None:
        """Stop passing bytes on at the next resting point (see :class:`FrameCursor`)."""
        cursor = self.cursor
        cursor.holding = True
        if cursor.at_rest and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def release(self) -> None:
        """Pass on again, from what was held."""
        cursor = self.cursor
        cursor.holding = False
        held = bytes(cursor.held)
        cursor.held.clear()
        if held:
            self.data_received(held)
        if self.paused and self.transport is not None and not self.transport.is_closing():
            self.paused = False
            self.transport.resume_reading()  # (aiohttp's own pause, if any, stays)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class HeldWrites:
    """The transport of a socket on its way here: it keeps the frames pushed to it until the
    socket arrives (see :meth:`SocketMoves._adopt`)."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.size = 0
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.closing:
            self.frames.append(bytes(data))
            self.size += len(data)

    def get_write_buffer_size(self) -> int:
        return self.size

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True
        self.frames.clear()


class _MovedProtocol(asyncio.Protocol):
    """The protocol of an adopted socket: the bytes go through a shim's cursor to aiohttp's
    WebSocket parser and its message queue, read by :meth:`MovedSocket.receive`."""

    def __init__(self, max_msg_size: int, loop: asyncio.AbstractEventLoop) -> None:
        self._reading_paused = False
        self.held = b""  # bytes the giving worker read past the boundary (fed first)
        self.transport: asyncio.Transport | None = None
        self.queue = WebSocketDataQueue(cast(Any, self), READ_CHUNK, loop=loop)
        self.parser = WebSocketReader(self.queue, max_msg_size, compress=False,
                                      decode_text=True)
        self.shim = FrameShim(cast(asyncio.Protocol, _Parse(self.parser)), None)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.shim.transport = self.transport
        held, self.held = self.held, b""
        if held:  # the bytes read past the boundary where it was: before any read here
            self.shim.data_received(held)

    def data_received(self, data: bytes) -> None:
        self.shim.data_received(data)

    def eof_received(self) -> bool | None:
        self.queue.feed_eof()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.queue.feed_eof()

    def pause_reading(self) -> None:  # called by the queue when it holds too much
        if self.transport is not None and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()


class _Parse:
    """The shim's inner protocol for an adopted socket: the parser."""

    def __init__(self, parser: WebSocketReader) -> None:
        self.parser = parser

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def eof_received(self) -> None:
        self.parser.feed_eof()

    def connection_lost(self, exc: Exception | None) -> None:
        self.parser.feed_eof()

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass


def _control(opcode: int, payload: bytes) -> bytes:
    return bytes((0x80 | opcode, len(payload))) + payload


class MovedSocket:
    """The WebSocket of a socket handed over by a sibling: what ``server/net/ws.py`` and
    :class:`~server.net.connection.Connection` use of aiohttp's ``WebSocketResponse``
    (``receive``, ``pong``, ``close``, ``closed``)."""

    def __init__(self, max_msg_size: int, loop: asyncio.AbstractEventLoop) -> None:
        self.protocol = _MovedProtocol(max_msg_size, loop)
        self.transport: HeldWrites | asyncio.Transport = HeldWrites()
        self.closed = False

    @property
    def shim(self) -> FrameShim:
        return self.protocol.shim

    async def receive(self) -> WSMessage:
        try:
            msg = await self.protocol.queue.read()
        except WebSocketError as exc:
            await self.close(code=exc.code, message=str(exc).encode()[:120])
            return WSMessage(WSMsgType.ERROR, exc, None)
        except EofStream:
            self._drop()
            return WSMessage(WSMsgType.CLOSED, None, None)
        except Exception as exc:
            self._drop()
            return WSMessage(WSMsgType.ERROR, exc, None)
        if msg.type is WSMsgType.CLOSE:
            await self.close(code=msg.data if isinstance(msg.data, int) and msg.data else 1000)
        return cast(WSMessage, msg)

    async def pong(self, data: bytes = b"") -> None:
        if not self.closed:
            self.transport.write(_control(0xA, bytes(data)[:125]))

    async def close(self, *, code: int = WSCloseCode.OK, message: bytes = b"") -> bool:
        if self.closed:
            return False
        self.closed = True
        self.transport.write(_control(0x8, code.to_bytes(2, "big") + message[:123]))
        self.transport.close()
        return True

    def _drop(self) -> None:
        self.closed = True
        with contextlib.suppress(Exception):
            self.transport.close()


Serve = Callable[[Connection], Awaitable[None]]


class SocketMoves:
    """Hands this worker's sockets to the sibling that summons them, and adopts the ones
    handed here (see the module). One per worker with siblings; ``serve`` and ``forget`` are
    set by the socket endpoint (``ws.py``): serve an adopted socket until it closes, and
    forget a socket made ready that never came."""

    def __init__(self, settings: Settings, hub: Hub, bus: NodeSender, homes: SocketHomes,
                 limits: SessionLimits, metrics: Metrics,
                 link_up: Callable[[str], bool] = lambda node: True) -> None:
        """``link_up(node)``: whether the local link to sibling ``node`` is up (the order of
        the hand-over's messages holds only over it)."""
        self.settings = settings
        self.node_id = settings.node_id
        self.siblings = settings.siblings
        self.enabled = bool(settings.socket_moves and settings.local_link
                            and settings.link_dir and self.siblings)
        self.hub = hub
        self.bus = bus
        self.homes = homes
        self.limits = limits
        self.metrics = metrics
        self.link_up = link_up
        self.serve: Serve | None = None
        self.forget: Serve | None = None
        self._post: socket.socket | None = None
        self._out: socket.socket | None = None
        # Our sockets asked for: conn id -> (the socket, the answer: its id there, and
        # whether it was closed here meanwhile).
        self._asked: dict[str, tuple[Connection, asyncio.Future[tuple[str, bool]]]] = {}
        self._arriving: dict[tuple[str, str], tuple[Connection, asyncio.TimerHandle]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- set-up ---------------------------------------------------------------------------

    def start(self) -> None:
        if not self.enabled:
            return
        path = post_path(self.settings.link_dir, self.node_id)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        post = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        post.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, DATAGRAM_BUFFER)
        post.bind(path)
        post.setblocking(False)
        out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        out.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, DATAGRAM_BUFFER)
        out.setblocking(False)
        self._post, self._out = post, out
        asyncio.get_running_loop().add_reader(post.fileno(), self._readable)

    async def stop(self) -> None:
        if self._post is not None:
            asyncio.get_running_loop().remove_reader(self._post.fileno())
            self._post.close()
            with contextlib.suppress(OSError):
                os.unlink(post_path(self.settings.link_dir, self.node_id))
        if self._out is not None:
            self._out.close()
        self._post = self._out = None
        for conn, timer in list(self._arriving.values()):
            timer.cancel()
            await self._give_up(conn)
        self._arriving.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def wrap(self, conn: Connection, transport: asyncio.BaseTransport | None) -> None:
        """Put a shim in front of a socket that upgraded here (before it reads a frame)."""
        if not self.enabled or transport is None:
            return
        inner = transport.get_protocol()
        shim = FrameShim(cast(asyncio.Protocol, inner), cast(asyncio.Transport, transport))
        transport.set_protocol(shim)
        conn.shim = shim

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- node messages ----------------------------------------------------------------------

    async def on_message(self, message: ops.NodeMessage) -> None:
        if not self.enabled:
            if isinstance(message, ops.MoveAsk):
                self.bus.send(message.actor.node, ops.MoveReady(
                    node=self.node_id, old=message.actor.conn, new=""))
            return
        if isinstance(message, ops.Summon):
            self._summoned(message)
        elif isinstance(message, ops.MoveAsk):
            self._ask(message)
            self._spawn(self._arrived_elsewhere(message))
        elif isinstance(message, ops.MoveReady):
            asked = self._asked.pop(message.old, None)
            if asked is not None and not asked[1].done():
                conn, future = asked
                # Nothing more is written here from now on (what follows in this batch of
                # node messages goes to the socket made ready there), in the same step.
                closed_meanwhile = conn.closed
                if message.new:
                    conn.closed = True
                future.set_result((message.new, closed_meanwhile))
            elif message.new:  # too late: we gave up waiting and closed the socket
                self.bus.send(message.node, ops.MoveCancel(node=self.node_id,
                                                           old=message.old))
        elif isinstance(message, ops.MoveCancel):
            entry = self._arriving.pop((message.node, message.old), None)
            if entry is not None:
                entry[1].cancel()
                await self._give_up(entry[0])

    # --- the holder -----------------------------------------------------------------------

    def _summoned(self, message: ops.Summon) -> None:
        conn = self.hub.by_id.get(message.conn)
        to = message.node
        if conn is None or conn.player != message.player or conn.closed or conn.moving \
                or conn.shim is None or conn.shim.broken or to not in self.siblings \
                or not conn.session.is_ready or conn.actor is None:
            return
        if not self.link_up(to) or not self.homes.may_hand_over(conn.id, to):
            log.info("socket %s (%s) stays: link to %s %s", conn.id, conn.player, to,
                     self.link_up(to))
            self.metrics.socket_moves.labels("stayed").inc()
            return
        conn.moving = True
        self._spawn(self._hand_over(conn, to, message.table, message.seated))

    async def _hand_over(self, conn: Connection, to: str, table: str, seated: bool) -> None:
        shim = conn.shim
        assert shim is not None and conn.actor is not None and conn.identity is not None
        if not seated and await self.homes.has_seat(conn.identity.player):
            # Summoned to watch by a player seated somewhere: the socket follows its seat.
            self._stay(conn, "stayed", release=False)
            return
        transport = conn.transport
        loop = asyncio.get_running_loop()
        shim.hold()
        deadline = loop.time() + REST_WAIT
        while not (shim.cursor.at_rest and conn.parked
                   and conn.received == shim.cursor.messages):
            if loop.time() > deadline or conn.closed or shim.broken \
                    or conn.received > shim.cursor.messages:
                self._stay(conn, "stayed")
                return
            await asyncio.sleep(0.002)
        if transport is None or transport.is_closing() or len(shim.cursor.held) > HELD_MAX \
                or conn.closed:
            self._stay(conn, "stayed")
            return
        # At rest: everything it sent is handled (forwarded to ``to`` in order). Ask.
        remaining_expiry: float | None = None
        if conn.expiry is not None:
            when = getattr(conn.expiry, "when", None)
            if callable(when):
                remaining_expiry = max(0.0, float(when()) - loop.time())
        identity = conn.identity
        future: asyncio.Future[tuple[str, bool]] = loop.create_future()
        self._asked[conn.id] = (conn, future)
        self.bus.send(to, ops.MoveAsk(
            actor=conn.actor, table=table, seated=seated, is_bot=identity.is_bot,
            format=str(conn.session.format), protocol=conn.session.protocol,
            keepalive=conn.keepalive, token_digest=conn.token_digest,
            expires_in=remaining_expiry, delivered=conn.delivered.ids(),
            watching=sorted(conn.watching),
            last_there=self.hub.count(identity.player) <= 1))
        try:
            async with asyncio.timeout(READY_WAIT):
                new, closed_meanwhile = await future
        except TimeoutError:
            self._asked.pop(conn.id, None)
            await self._failed(conn, "no answer to move_ask", to, notify=True)
            return
        if not new:  # refused: nothing changed there
            self._stay(conn, "refused")
            return
        if closed_meanwhile or transport.is_closing() or conn.ws.closed:
            # Closed here while the owner made a socket ready (its token ended, say): not
            # handed over; its own close goes on (the shim lets the client's answer in).
            self.bus.send(to, ops.MoveCancel(node=self.node_id, old=conn.actor.conn))
            self._stay(conn, "failed")
            return
        # From here the socket's frames go to ``to``'s ready socket (conn.closed is set).
        deadline = loop.time() + SEND_WAIT
        while transport.get_write_buffer_size():
            if loop.time() > deadline or transport.is_closing():
                await self._failed(conn, "its send buffer did not empty", to, notify=True)
                return
            await asyncio.sleep(0.005)
        raw = transport.get_extra_info("socket")
        fd = raw.fileno() if raw is not None else -1
        name = f"{self.node_id}\0{conn.actor.conn}".encode()
        payload = len(name).to_bytes(2, "big") + name + bytes(shim.cursor.held)
        while True:
            try:
                assert self._out is not None
                # (socket.send_fds drops its address argument on 3.11: sendmsg itself)
                self._out.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                               array.array("i", [fd]))],
                                  0, post_path(self.settings.link_dir, to))
                break
            except BlockingIOError:
                if loop.time() > deadline:
                    await self._failed(conn, "the datagram queue stayed full", to, notify=True)
                    return
                await asyncio.sleep(0.002)
            except (OSError, AssertionError) as exc:
                await self._failed(conn, f"sending the descriptor failed: {exc}", to,
                                   notify=True)
                return
        # Gone to ``to``: drop this side without a word (the connection lives on there) and
        # forget it as a closed socket (ws.py's reader ends on the lost connection).
        self.homes.handed_over(conn.id)
        conn.moved_to = to
        self.metrics.socket_moves.labels("moved").inc()
        transport.abort()

    def _stay(self, conn: Connection, result: str, *, release: bool = True) -> None:
        """The socket stays here and reads on (``release``: from what its shim held);
        ``result`` is counted."""
        if release and conn.shim is not None:
            conn.shim.release()
        conn.moving = False
        self.metrics.socket_moves.labels(result).inc()

    async def _failed(self, conn: Connection, why: str, to: str | None = None, *,
                      notify: bool = False) -> None:
        log.warning("socket %s (%s) not handed over: %s; closed with 1012", conn.id,
                    conn.player, why)
        self.metrics.socket_moves.labels("failed").inc()
        if notify and to is not None and conn.actor is not None:
            self.bus.send(to, ops.MoveCancel(node=self.node_id, old=conn.actor.conn))
        shim = conn.shim
        transport = conn.transport
        conn.closed = True
        if transport is not None and not transport.is_closing():
            # The close frame goes out even though the socket holds: the client reconnects.
            transport.write(_control(0x8, CLOSE_SERVICE_RESTART.to_bytes(2, "big")
                                     + b"service restart"))
            transport.close()
        if shim is not None:
            shim.cursor.held.clear()

    # --- the owner ------------------------------------------------------------------------

    def _ask(self, message: ops.MoveAsk) -> None:
        old = message.actor
        settings = self.settings
        if self.hub.count(old.player) >= settings.max_connections_per_player \
                or old.node not in self.siblings or self._post is None or self.homes.closing \
                or not self.link_up(old.node) \
                or not self.homes.may_arrive(old.player, message.table, seated=message.seated):
            log.info("socket %s of %s (%s) not taken: sockets %d, link %s, closing %s, "
                     "may arrive %s", old.conn, old.node, old.player,
                     self.hub.count(old.player), self.link_up(old.node), self.homes.closing,
                     self.homes.may_arrive(old.player, message.table, seated=message.seated))
            self.homes.summon_again(old.node, old.conn)  # (at its next command, not in 10 s)
            self.bus.send(old.node, ops.MoveReady(node=self.node_id, old=old.conn, new=""))
            return
        loop = asyncio.get_running_loop()
        now = self.hub.clock.monotonic()
        fmt = WireFormat.MSGPACK if message.format == str(WireFormat.MSGPACK) \
            else WireFormat.JSON
        session = Session(self.limits, now=now, fmt=fmt, player=old.player,
                          protocol=message.protocol)
        ws = MovedSocket(settings.max_msg_size, loop)
        conn = Connection(cast(Any, ws), session, old.address, cast(Any, ws.transport),
                          now=now, delivered_ids=settings.socket_delivered_ids)
        conn.keepalive = message.keepalive
        conn.shim = ws.shim
        for event_id in message.delivered:
            conn.delivered.add(event_id)
        conn.watching.update(message.watching)
        hub = self.hub
        hub.reserve_address(old.address)
        hub.add(conn)
        actor = conn.authenticated(Identity(old.player, old.name, old.is_guest, message.is_bot),
                                   self.node_id)
        conn.first_here = hub.bind(conn) == 1
        if message.token_digest is not None:
            hub.bind_token(conn, message.token_digest, message.expires_in)
        self.metrics.connections.inc()
        self.homes.socket_arriving(old, actor, message.table, message.watching,
                                   last_there=message.last_there)
        key = (old.node, old.conn)
        timer = loop.call_later(ARRIVE_WAIT, self._not_arrived, key)
        self._arriving[key] = (conn, timer)
        self.bus.send(old.node, ops.MoveReady(node=self.node_id, old=old.conn, new=conn.id))

    async def _arrived_elsewhere(self, message: ops.MoveAsk) -> None:
        """After :meth:`_ask` answered: what the lobby does for a socket new here (its
        player's presence, chat mutes), off the critical path of the hand-over."""
        entry = self._arriving.get((message.actor.node, message.actor.conn))
        if entry is None or entry[0].actor is None:
            return
        await self.homes.socket_arrived(entry[0].actor, first_here=entry[0].first_here)

    def _not_arrived(self, key: tuple[str, str]) -> None:
        entry = self._arriving.pop(key, None)
        if entry is not None:
            log.warning("socket %s of %s made ready for a hand-over never came", entry[0].id,
                        key[0])
            self._spawn(self._give_up(entry[0]))

    async def _give_up(self, conn: Connection) -> None:
        conn.closed = True
        if self.forget is not None:
            await self.forget(conn)

    def _readable(self) -> None:
        post = self._post
        while post is not None:
            try:
                data, fds, _flags, _addr = socket.recv_fds(post, DATAGRAM_BUFFER, 4)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.warning("socket hand-over: reading the datagram failed: %s", exc)
                return
            for extra in fds[1:]:
                os.close(extra)
            if not fds:
                continue
            self._spawn(self._adopt(data, fds[0]))

    async def _adopt(self, data: bytes, fd: int) -> None:
        size = int.from_bytes(data[:2], "big")
        node, _, old = data[2:2 + size].decode(errors="replace").partition("\0")
        held = data[2 + size:]
        entry = self._arriving.pop((node, old), None)
        sock = socket.socket(fileno=fd)
        if entry is None:
            log.warning("socket %s of %s came after it was given up: dropped", old, node)
            sock.close()
            return
        conn, timer = entry
        timer.cancel()
        ws = cast(MovedSocket, conn.ws)
        ws.protocol.held = held
        try:
            sock.setblocking(False)
            transport, _ = await asyncio.get_running_loop().connect_accepted_socket(
                lambda: ws.protocol, sock=sock)
        except OSError as exc:
            log.warning("socket %s of %s not adopted: %s", old, node, exc)
            sock.close()
            await self._give_up(conn)
            return
        waiting = ws.transport
        assert isinstance(waiting, HeldWrites)
        ws.transport = transport
        conn.transport = writable(transport)
        if waiting.frames:
            transport.write(b"".join(waiting.frames))
        if waiting.closing:
            ws.closed = True
            transport.close()
        if self.serve is not None:
            await self.serve(conn)

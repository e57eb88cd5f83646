"""Live sockets on this node, and the ordered outbox that writes to them.

Table logic runs synchronously and only *queues* what it sends (:meth:`Hub.push`); the
coroutine that drove the change then awaits :meth:`Hub.flush`, which writes the frames in the
order they were queued. The sockets are opened with compression off and an unbounded writer
limit, so a write never suspends on flow control; instead a socket whose unsent bytes exceed
``max_send_buffer`` is a slow consumer and is dropped, so one stalled watcher cannot hold up a
game. If something queues without flushing, a flush is scheduled on the next loop turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from typing import Any

from aiohttp import WSMsgType, web

from server.accounts import Identity
from server.protocol.codec import Outgoing, WireFormat
from server.session import Session

log = logging.getLogger(__name__)

CLOSE_GOING_AWAY = 1001
CLOSE_SLOW_CONSUMER = 1008

_ids = itertools.count(1)


class Connection:
    """One authenticated (or authenticating) WebSocket on this node."""

    __slots__ = ("address", "closed", "id", "identity", "session", "transport", "watching", "ws")

    def __init__(
        self,
        ws: web.WebSocketResponse,
        session: Session,
        address: str,
        transport: asyncio.BaseTransport | None,
    ) -> None:
        self.id = f"c{next(_ids)}"
        self.ws = ws
        self.session = session
        self.address = address
        self.transport = transport
        self.identity: Identity | None = None
        self.watching: set[str] = set()
        self.closed = False

    @property
    def player(self) -> str | None:
        return None if self.identity is None else self.identity.player

    @property
    def format(self) -> WireFormat:
        return self.session.format

    def buffered(self) -> int:
        transport = self.transport
        if transport is None or not isinstance(transport, asyncio.WriteTransport):
            return 0
        return transport.get_write_buffer_size()

    async def write(self, data: bytes, fmt: WireFormat) -> None:
        """Write one frame now. Errors from a socket that went away are swallowed."""
        if self.closed or self.ws.closed:
            return
        opcode = WSMsgType.BINARY if fmt.is_binary else WSMsgType.TEXT
        try:
            await self.ws.send_frame(data, opcode)
        except (ConnectionError, RuntimeError):
            self.closed = True

    async def send(self, message: dict[str, Any]) -> None:
        """Encode in this socket's format and write (for one-off replies)."""
        out = Outgoing(message)
        await self.write(out.frame(self.format), self.format)

    async def close(self, code: int, reason: str) -> None:
        if self.closed and self.ws.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            await self.ws.close(code=code, message=reason.encode()[:120])

    def abort(self) -> None:
        """Drop the socket without a closing handshake (slow consumer)."""
        self.closed = True
        transport = self.transport
        if isinstance(transport, asyncio.WriteTransport):
            transport.abort()  # close() would wait to send the backlog first
        elif transport is not None:
            transport.close()


class Hub:
    """Registry of this node's sockets, by id and by player, and the ordered outbox."""

    def __init__(self, max_send_buffer: int) -> None:
        self.by_id: dict[str, Connection] = {}
        self.by_player: dict[str, set[Connection]] = {}
        self._outbox: deque[tuple[Connection, Outgoing]] = deque()
        self._max_send_buffer = max_send_buffer
        self._flush_scheduled = False
        self._flushing = False
        self._background: set[asyncio.Task[None]] = set()

    # registry -----------------------------------------------------------------------------

    def add(self, conn: Connection) -> None:
        self.by_id[conn.id] = conn

    def bind(self, conn: Connection) -> int:
        """Record ``conn`` under its player; the player's number of sockets on this node."""
        assert conn.player is not None
        conns = self.by_player.setdefault(conn.player, set())
        conns.add(conn)
        return len(conns)

    def remove(self, conn: Connection) -> int:
        """Forget ``conn``; the number of sockets its player still has on this node."""
        self.by_id.pop(conn.id, None)
        player = conn.player
        if player is None:
            return 0
        conns = self.by_player.get(player)
        if conns is None:
            return 0
        conns.discard(conn)
        if not conns:
            del self.by_player[player]
            return 0
        return len(conns)

    def count(self, player: str) -> int:
        return len(self.by_player.get(player, ()))

    def all(self) -> list[Connection]:
        return list(self.by_id.values())

    # outbox -------------------------------------------------------------------------------

    def push(self, conn: Connection, out: Outgoing) -> None:
        self._outbox.append((conn, out))
        self.flush_soon()

    def push_player(self, player: str, out: Outgoing) -> bool:
        """Queue ``out`` for every socket of ``player`` here; False when there is none."""
        conns = self.by_player.get(player)
        if not conns:
            return False
        for conn in conns:
            self._outbox.append((conn, out))
        self.flush_soon()
        return True

    def push_conn_id(self, conn_id: str, out: Outgoing) -> bool:
        conn = self.by_id.get(conn_id)
        if conn is None:
            return False
        self.push(conn, out)
        return True

    def flush_soon(self) -> None:
        """Make sure queued frames are written on the next loop turn."""
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._kick)

    def _kick(self) -> None:
        self._flush_scheduled = False
        if self._outbox and not self._flushing:
            task = asyncio.ensure_future(self.flush())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def flush(self) -> None:
        """Write every queued frame, in order."""
        if self._flushing:
            return
        self._flushing = True
        try:
            outbox = self._outbox
            limit = self._max_send_buffer
            while outbox:
                conn, out = outbox.popleft()
                if conn.closed:
                    continue
                if conn.buffered() > limit:
                    log.info("dropping slow consumer %s (%s)", conn.id, conn.player)
                    conn.abort()
                    continue
                fmt = conn.session.format
                await conn.write(out.frame(fmt), fmt)
        finally:
            self._flushing = False

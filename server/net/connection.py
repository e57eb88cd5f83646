"""Live sockets on this node, and the writes to them.

Table logic runs synchronously and pushes what it sends (:meth:`Hub.push`); a push writes the
frame to the socket's transport at once, so frames leave in the order they were pushed. Between
:meth:`Hub.begin_gather` and :meth:`Hub.end_gather` (one synchronous stretch, such as an
announcement of stored events and the replies after them) the frames for one socket are
gathered and written together at the release, in order, one transport write (one ``send``)
per socket. The sockets are opened with compression off and an unbounded
writer limit, so a write never suspends on flow control; instead a socket whose unsent bytes
exceed ``max_send_buffer`` is a slow consumer and is closed (:meth:`Connection.drop_slow`:
a close frame 4002 ``slow consumer`` after what it holds, then dropped if it still holds it
``SLOW_CLOSE_WAIT`` seconds later), so one stalled watcher cannot hold up a game nor grow
the node's memory. A frame is built once per wire format (:meth:`Outgoing.wire`) and the same
bytes go to every socket that reads that format. Nothing is ever left to flush: a push
returns with its frame handed to the socket (or gathered until the release).

The hub is the lobby's outbox (:class:`server.lobby.ports.Outbox`): the lobby names sockets by
id and players by id, and what a socket holds for the lobby (the tables it watches, the inbox
events written to it, who sends on it) is kept here, on the socket, so it ends with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable, Iterable
from typing import Any, cast

from aiohttp import web

from server.lobby.clock import LoopClock
from server.lobby.ports import Clock, Handle
from server.protocol.codec import Outgoing, WireFormat, wire_frame
from server.protocol.delivered_ids import DeliveredIds
from server.protocol.ids import network_key
from server.protocol.node_messages import Actor
from server.protocol.session import Session
from server.store.accounts import Identity

log = logging.getLogger(__name__)

CLOSE_GOING_AWAY = 1001
CLOSE_SLOW_CONSUMER = 4002
"""A socket that let more than ``max_send_buffer`` unsent bytes pile up; the close reason is
``slow consumer``. Reconnect and ``sync`` (the client library does): frames past the limit
were not sent."""
SLOW_CLOSE_WAIT = 5.0
"""Seconds a slow consumer's socket may take to read what it holds and the close frame
before it is dropped without them."""
CLOSE_TOKEN_ENDED = 4001
"""The socket's bearer token ended (logout, expiry, password change, operator revoke); the
close reason says which. Get a new token before reconnecting."""

_ids = itertools.count(1)


def writable(transport: asyncio.BaseTransport | None) -> asyncio.WriteTransport | None:
    """The socket's transport as something frames are written to, or None (no transport, or
    one that cannot write). uvloop's transports do not subclass ``asyncio.WriteTransport``:
    what is checked is that the methods this module calls are there."""
    if isinstance(transport, asyncio.WriteTransport):
        return transport
    if transport is not None and all(callable(getattr(transport, name, None)) for name in (
            "write", "get_write_buffer_size", "is_closing", "abort")):
        return cast("asyncio.WriteTransport", transport)
    return None


def _abort(transport: asyncio.WriteTransport) -> None:
    """Drop ``transport`` now (a closed one is left as it is)."""
    with contextlib.suppress(Exception):
        transport.abort()


class Connection:
    """One authenticated (or authenticating) WebSocket on this node."""

    __slots__ = ("actor", "address", "closed", "delivered", "expiry", "first_here",
                 "heard_at", "id", "identity", "keepalive", "moved_to", "moving", "parked",
                 "pinged_at", "pushed", "received", "session", "shim", "token_digest",
                 "transport", "watching", "ws")

    def __init__(
        self,
        ws: web.WebSocketResponse,
        session: Session,
        address: str,
        transport: asyncio.BaseTransport | None,
        *,
        now: float = 0.0,
        delivered_ids: int = 256,
    ) -> None:
        self.id = f"c{next(_ids)}"
        self.ws = ws
        self.session = session
        self.address = address
        self.transport = writable(transport)
        self.identity: Identity | None = None
        self.actor: Actor | None = None  # who sends on this socket (made once authenticated)
        self.watching: set[str] = set()  # at most socket_watch_max (server/lobby/watches.py)
        self.closed = False
        # The newest rating/tournament event ids written to this socket (a bounded window).
        self.delivered = DeliveredIds(delivered_ids)
        self.token_digest: str | None = None  # the digest of the token it authenticated with
        self.expiry: Handle | None = None  # closes it when the token expires
        # The socket's heartbeat (server/net/heartbeat.py): when its last frame came (loop
        # time, set by the reader), and when it was pinged for being silent (None: not).
        self.heard_at = now
        self.pinged_at: float | None = None
        # Keep-alives (PROTOCOL.md §1): whether the client asked for them, and the hub's
        # keep-alive period in which something was last pushed to it (Hub.push).
        self.keepalive = False
        self.pushed = 0
        # Hand-overs between the workers of a machine (server/net/socket_moves.py): the
        # socket's frame shim (None: it never moves), the messages its reader took, whether
        # the reader waits for the next one, whether a hand-over is under way, where it went.
        self.shim: Any = None
        self.received = 0
        self.parked = False
        self.moving = False
        self.moved_to: str | None = None
        self.first_here = False

    @property
    def player(self) -> str | None:
        return None if self.identity is None else self.identity.player

    def authenticated(self, identity: Identity, node_id: str) -> Actor:
        """The socket authenticated as ``identity`` on node ``node_id``: who sends on it."""
        self.identity = identity
        self.actor = Actor(identity.player, identity.name, identity.is_guest, self.address,
                           node_id, self.id, self.session.lean)
        return self.actor

    @property
    def format(self) -> WireFormat:
        return self.session.format

    def is_writable(self) -> bool:
        transport = self.transport
        return not (self.closed or self.ws.closed or transport is None
                    or transport.is_closing())

    def write_frame(self, frame: bytes) -> None:
        """Write one whole WebSocket frame (header included, see :meth:`Outgoing.wire`)."""
        if self.is_writable():
            assert self.transport is not None
            self.transport.write(frame)

    async def write(self, data: bytes, fmt: WireFormat) -> None:
        """Write one frame with ``data`` as its payload. Writes to a closed socket are
        dropped."""
        self.write_frame(wire_frame(data, fmt))

    async def send(self, message: dict[str, Any]) -> None:
        """Encode in this socket's format and write (for one-off replies)."""
        self.write_frame(Outgoing(message).wire(self.format, self.session.lean))

    async def close(self, code: int, reason: str) -> None:
        if self.closed and self.ws.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            await self.ws.close(code=code, message=reason.encode()[:120])

    def drop_slow(self) -> None:
        """A slow consumer: nothing more is pushed to it; a close frame (4002 ``slow
        consumer``) goes after the bytes it holds, the transport closes once they are sent,
        and is dropped if they are still unsent after ``SLOW_CLOSE_WAIT`` seconds."""
        self.closed = True
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        reason = b"slow consumer"
        transport.write(bytes((0x88, 2 + len(reason)))
                        + CLOSE_SLOW_CONSUMER.to_bytes(2, "big") + reason)
        transport.close()
        asyncio.get_running_loop().call_later(SLOW_CLOSE_WAIT, _abort, transport)

    def abort(self) -> None:
        """Drop the socket without a closing handshake (no answer to pings, shutdown)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()  # close() would wait to send the backlog first


class Hub:
    """Registry of this node's sockets, by id and by player, and the writes to them."""

    def __init__(self, max_send_buffer: int,
                 on_token_end: Callable[[str], None] | None = None, *,
                 clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.by_id: dict[str, Connection] = {}
        self.by_player: dict[str, set[Connection]] = {}
        self.by_token: dict[str, set[Connection]] = {}
        self.by_address: dict[str, int] = {}
        self._max_send_buffer = max_send_buffer
        self._gathered: dict[Connection, list[bytes]] | None = None  # see begin_gather
        self._gather_depth = 0
        # Called with (reason) for every socket closed because its token ended (metrics).
        self._on_token_end = on_token_end
        self._closing: set[asyncio.Future[None]] = set()
        # The keep-alive period now (server/net/heartbeat.py counts them): a socket pushed
        # nothing in the last whole period gets a keep-alive.
        self.period = 0

    # registry -----------------------------------------------------------------------------

    def reserve_address(self, address: str) -> None:
        """Count one more socket from ``address``'s network now, before the upgrade awaits
        anything: concurrent upgrades see each other's place, so the cap holds. The place
        becomes the socket's (:meth:`add`) or is given back (:meth:`release_address`)."""
        key = network_key(address)
        self.by_address[key] = self.by_address.get(key, 0) + 1

    def release_address(self, address: str) -> None:
        """Give back a place :meth:`reserve_address` took for a socket that was never added."""
        key = network_key(address)
        left = self.by_address.get(key, 0) - 1
        if left > 0:
            self.by_address[key] = left
        else:
            self.by_address.pop(key, None)

    def add(self, conn: Connection) -> None:
        """Register ``conn``, whose address place :meth:`reserve_address` took."""
        self.by_id[conn.id] = conn

    def address_count(self, address: str) -> int:
        """Sockets open (or being opened) from ``address``'s network (an IPv6 address counts
        as its /64)."""
        return self.by_address.get(network_key(address), 0)

    def bind_token(self, conn: Connection, digest: str, expires_in: float | None) -> None:
        """Remember which token ``conn`` came with; close it when the token expires."""
        conn.token_digest = digest
        self.by_token.setdefault(digest, set()).add(conn)
        if expires_in is not None:
            conn.expiry = self.clock.call_later(max(0.0, expires_in), self._expired, conn)

    def _expired(self, conn: Connection) -> None:
        conn.expiry = None
        if conn.token_digest is not None:
            self.end_token(conn.token_digest, "token expired")

    def end_token(self, digest: str, reason: str) -> int:
        """Close every socket here that authenticated with the token ``digest``."""
        conns = self.by_token.pop(digest, None)
        if not conns:
            return 0
        for conn in conns:
            if conn.expiry is not None:
                conn.expiry.cancel()
                conn.expiry = None
            if self._on_token_end is not None:
                self._on_token_end(reason)
            task = asyncio.ensure_future(conn.close(CLOSE_TOKEN_ENDED, reason))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        return len(conns)

    def end_all_tokens(self, reason: str) -> int:
        """Close every authenticated socket here with 4001 (the store lost every token)."""
        return sum(self.end_token(digest, reason) for digest in list(self.by_token))

    def bind(self, conn: Connection) -> int:
        """Record ``conn`` under its player; the player's number of sockets on this node."""
        assert conn.player is not None
        conns = self.by_player.setdefault(conn.player, set())
        conns.add(conn)
        return len(conns)

    def remove(self, conn: Connection) -> int:
        """Forget ``conn``; the number of sockets its player still has on this node."""
        if self.by_id.pop(conn.id, None) is not None:
            self.release_address(conn.address)
        if conn.expiry is not None:
            conn.expiry.cancel()
            conn.expiry = None
        if conn.token_digest is not None:
            same = self.by_token.get(conn.token_digest)
            if same is not None:
                same.discard(conn)
                if not same:
                    del self.by_token[conn.token_digest]
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

    # writes -------------------------------------------------------------------------------

    def push(self, conn: Connection, out: Outgoing) -> None:
        """Write ``out`` to ``conn`` now, in the socket's current format; a socket with more
        than ``max_send_buffer`` unsent bytes is dropped instead."""
        transport = conn.transport
        if conn.closed or transport is None or transport.is_closing() or conn.ws.closed:
            return
        if transport.get_write_buffer_size() > self._max_send_buffer:
            log.info("closing slow consumer %s (%s): over %d unsent bytes", conn.id,
                     conn.player, self._max_send_buffer)
            conn.drop_slow()
            return
        conn.pushed = self.period
        session = conn.session
        frame = out.wire(session.format, session.lean)
        gathered = self._gathered
        if gathered is None:
            transport.write(frame)
        elif (frames := gathered.get(conn)) is None:
            gathered[conn] = [frame]
        else:
            frames.append(frame)

    def begin_gather(self) -> None:
        """Gather the frames pushed from now until :meth:`end_gather`, per socket. Only
        for a stretch with no ``await`` in it: nothing waits past it."""
        self._gather_depth += 1
        if self._gathered is None:
            self._gathered = {}

    def end_gather(self) -> None:
        """Write what :meth:`begin_gather` gathered: each socket's frames in push order, in
        one transport write."""
        self._gather_depth -= 1
        if self._gather_depth or self._gathered is None:
            return
        gathered, self._gathered = self._gathered, None
        for conn, frames in gathered.items():
            transport = conn.transport
            if transport is None or not conn.is_writable():
                continue
            transport.write(frames[0] if len(frames) == 1 else b"".join(frames))

    def gather_writes(self, on: bool) -> None:
        """:meth:`begin_gather` (``on``) or :meth:`end_gather`: for a caller that brackets
        a stretch with one callable."""
        if on:
            self.begin_gather()
        else:
            self.end_gather()

    def push_player(self, player: str, out: Outgoing) -> bool:
        """Write ``out`` to every socket of ``player`` here; False when there is none."""
        conns = self.by_player.get(player)
        if not conns:
            return False
        for conn in conns:
            self.push(conn, out)
        return True

    def push_conn_id(self, conn_id: str, out: Outgoing) -> bool:
        conn = self.by_id.get(conn_id)
        if conn is None:
            return False
        self.push(conn, out)
        return True

    def push_unique(self, players: Iterable[str], conn_ids: Iterable[str],
                    out: Outgoing) -> None:
        """Write ``out`` to the sockets here of ``players`` and to ``conn_ids``, once each."""
        seen: set[str] = set()
        targets = [c for p in players for c in self.by_player.get(p, ())]
        targets += [c for i in conn_ids if (c := self.by_id.get(i)) is not None]
        for conn in targets:
            if conn.id in seen:
                continue
            seen.add(conn.id)
            self.push(conn, out)

    # what each socket holds for the lobby (server.lobby.ports.Outbox) -------------------

    def players(self) -> list[str]:
        return list(self.by_player)

    def sockets_of(self, player: str) -> list[str]:
        return [conn.id for conn in self.by_player.get(player, ())]

    def actor_of(self, conn_id: str) -> Actor | None:
        conn = self.by_id.get(conn_id)
        return None if conn is None else conn.actor

    def player_of(self, conn_id: str) -> str | None:
        conn = self.by_id.get(conn_id)
        return None if conn is None else conn.player

    def is_writable(self, conn_id: str) -> bool:
        conn = self.by_id.get(conn_id)
        return conn is not None and conn.is_writable()

    def mark_delivered(self, conn_id: str, event_id: str) -> bool:
        conn = self.by_id.get(conn_id)
        if conn is None or event_id in conn.delivered:
            return False
        conn.delivered.add(event_id)
        return True

    def watching(self, conn_id: str) -> frozenset[str]:
        conn = self.by_id.get(conn_id)
        return frozenset() if conn is None else frozenset(conn.watching)

    def watch(self, conn_id: str, table_id: str) -> None:
        conn = self.by_id.get(conn_id)
        if conn is not None:
            conn.watching.add(table_id)

    def unwatch(self, conn_id: str, table_ids: Iterable[str]) -> None:
        conn = self.by_id.get(conn_id)
        if conn is not None:
            conn.watching.difference_update(table_ids)

    def charge(self, conn_id: str, messages: float) -> None:
        conn = self.by_id.get(conn_id)
        if conn is not None:
            conn.session.charge(messages, self.clock.monotonic())

    def own_url(self) -> str | None:
        """This node's WebSocket URL as a socket here reached it (None: no socket)."""
        for conn in self.by_id.values():
            transport = conn.transport
            sockname = transport.get_extra_info("sockname") if transport else None
            if sockname:
                host, port = sockname[0], sockname[1]
                if ":" in host:
                    host = f"[{host}]"
                if host in ("0.0.0.0", "[::]"):
                    host = "127.0.0.1"
                return f"ws://{host}:{port}/ws"
        return None


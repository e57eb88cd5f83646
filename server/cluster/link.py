"""The local link: node messages between the sibling workers of one ``--workers`` command
over Unix stream sockets, instead of a round trip through Redis pub/sub.

The parent of ``python -m server --workers N`` gives every worker the ids of all N workers
(``--link-peers``) and a folder of its own (``--link-dir``). Worker ``i`` (its place in that
list) listens on ``<link-dir>/<i>.sock``; every worker keeps one connection open to each
sibling's socket and writes only on it, so each direction of a pair is one stream. A message
is a 4-byte big-endian length and the message's msgpack bytes (``node_messages.encode``);
the messages queued in one turn of the event loop leave in one write per peer. The receiving
side decodes what each read brings and hands the messages, in order, to the bus.

The semantics are the bus's: fire-and-forget, ordered per destination, lost when the peer is
gone (one edge: a message published through Redis just before the link to its destination
came up may arrive after the first ones sent over the link, as between any two paths).
:meth:`LocalLink.send` returns False when the peer has no connection up (not started yet,
restarting, or the link is off): the bus then publishes through Redis as for a node on
another machine, so a message is never held back for the link. A connection that breaks is
dialled again every :data:`RETRY` seconds while the link runs; a peer whose unsent bytes pass
:data:`MAX_BACKLOG` (it stopped reading) is dropped, its messages lost like a dead node's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from server.protocol.node_messages import NodeMessage, decode

log = logging.getLogger(__name__)

RETRY = 0.25
"""Seconds between attempts to (re)connect to a sibling."""
MAX_FRAME = 64 << 20
"""A message longer than this is a broken stream: the connection is dropped."""
MAX_BACKLOG = 64 << 20
"""Unsent bytes to one peer past which its connection is dropped (it stopped reading)."""
HEADER = 4

Receiver = Callable[[list[NodeMessage]], None]


def socket_path(directory: str | Path, peers: Sequence[str], node: str) -> Path:
    """Where ``node`` (one of ``peers``) listens: named by its place in the list, so the
    path stays short whatever the node ids."""
    return Path(directory) / f"{list(peers).index(node)}.sock"


def frames(data: bytes, out: list[NodeMessage]) -> int:
    """Decode the whole messages at the start of ``data`` into ``out``; the bytes used.
    Raises ``ValueError`` for a length past :data:`MAX_FRAME`; a message that does not
    decode is logged and skipped."""
    view = memoryview(data)
    pos, end = 0, len(data)
    while end - pos >= HEADER:
        size = int.from_bytes(view[pos:pos + HEADER], "big")
        if size > MAX_FRAME:
            raise ValueError(f"a message of {size} bytes")
        start = pos + HEADER
        if end - start < size:
            break
        try:
            out.append(decode(view[start:start + size]))
        except ValueError as exc:
            log.warning("link: malformed message dropped (%d bytes): %s", size, exc)
        pos = start + size
    return pos


class _Incoming(asyncio.Protocol):
    """One sibling's stream to this node: decodes and hands on what each read brings."""

    def __init__(self, link: LocalLink) -> None:
        self._link = link
        self._rest = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass
        self._link.incoming.add(self)

    def data_received(self, data: bytes) -> None:
        if self._rest:
            data = self._rest + data
        messages: list[NodeMessage] = []
        try:
            used = frames(data, messages)
        except ValueError as exc:
            log.warning("link: broken stream dropped: %s", exc)
            assert self.transport is not None
            self.transport.abort()
            return
        self._rest = data[used:]
        if messages:
            self._link.receive(messages)

    def connection_lost(self, exc: Exception | None) -> None:
        self._link.incoming.discard(self)


class _Outgoing(asyncio.Protocol):
    """This node's stream to one sibling: written only; ``lost`` is done when it breaks."""

    def __init__(self) -> None:
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:  # the peer never writes
        pass

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


class _Peer:
    def __init__(self, node: str, path: Path) -> None:
        self.node = node
        self.path = path
        self.transport: asyncio.Transport | None = None
        self.pending: list[bytes] = []


class LocalLink:
    """Direct streams to the sibling workers ``peers`` (this node's id may be among them)."""

    def __init__(self, node_id: str, peers: Sequence[str], directory: str | Path,
                 receiver: Receiver) -> None:
        names = list(dict.fromkeys([*peers, node_id]))
        self.node_id = node_id
        self.path = socket_path(directory, names, node_id)
        self._peers = {n: _Peer(n, socket_path(directory, names, n))
                       for n in names if n != node_id}
        self._receiver = receiver
        self._dirty: list[_Peer] = []
        self._server: asyncio.AbstractServer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.incoming: set[_Incoming] = set()

    @property
    def peers(self) -> list[str]:
        return list(self._peers)

    def is_up(self, node: str) -> bool:
        """Whether messages for ``node`` go over the link now."""
        peer = self._peers.get(node)
        return peer is not None and peer.transport is not None

    async def start(self) -> None:
        """Listen on this node's socket (taking it over from a previous run) and start
        dialling every sibling."""
        loop = asyncio.get_running_loop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await loop.create_unix_server(lambda: _Incoming(self), str(self.path))
        os.chmod(self.path, 0o600)
        self._tasks = [asyncio.create_task(self._dial(peer), name=f"link-{peer.node}")
                       for peer in self._peers.values()]

    async def stop(self) -> None:
        """Write what is queued, close every stream and the socket. Never waits on a
        peer."""
        self.flush()
        for peer in self._peers.values():
            if peer.transport is not None:
                peer.transport.close()  # sends what is buffered first
                peer.transport = None
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._server is not None:
            self._server.close()
            self._server = None
        for incoming in list(self.incoming):
            if incoming.transport is not None:
                incoming.transport.abort()
        self.incoming.clear()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def send(self, node: str, data: bytes) -> bool:
        """Queue ``data`` (an encoded node message) for ``node``; False when the link to it
        is not up (the caller sends it another way)."""
        peer = self._peers.get(node)
        if peer is None or peer.transport is None:
            return False
        if not peer.pending:
            if not self._dirty:
                asyncio.get_running_loop().call_soon(self.flush)
            self._dirty.append(peer)
        peer.pending.append(len(data).to_bytes(HEADER, "big"))
        peer.pending.append(data)
        return True

    def flush(self) -> None:
        """Write every peer's queued messages, one write each."""
        dirty, self._dirty = self._dirty, []
        for peer in dirty:
            pending, peer.pending = peer.pending, []
            transport = peer.transport
            if transport is None or transport.is_closing():
                continue
            transport.write(b"".join(pending))
            if transport.get_write_buffer_size() > MAX_BACKLOG:
                log.warning("link: %s stopped reading, its messages dropped", peer.node)
                transport.abort()

    def receive(self, messages: list[NodeMessage]) -> None:
        self._receiver(messages)

    async def _dial(self, peer: _Peer) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                transport, protocol = await loop.create_unix_connection(
                    _Outgoing, str(peer.path))
            except OSError:
                await asyncio.sleep(RETRY)
                continue
            peer.transport = transport  # uvloop's too, typed as asyncio's
            log.info("link: connected to %s", peer.node)
            try:
                await protocol.lost
            finally:
                peer.transport = None
                if peer in self._dirty:
                    self._dirty.remove(peer)
                peer.pending = []
            log.info("link: connection to %s lost", peer.node)
            await asyncio.sleep(RETRY)

"""The hub's gathered writes: frames pushed between ``begin_gather`` and ``end_gather`` leave
in push order, one transport write per socket, and a socket closed meanwhile gets none; the
tables stored by one flush announce together."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import redis.asyncio as aioredis

from server.config import Settings
from server.net.connection import Connection, Hub
from server.net.ws import session_limits
from server.protocol.codec import Outgoing, WireFormat
from server.protocol.session import Session
from server.store.keys import Keys
from server.store.persistence import Persistence


class _Recorder(asyncio.WriteTransport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closing

    def abort(self) -> None:
        self.closing = True


class _OpenSocket:
    closed = False


def _conn(hub: Hub, name: str) -> tuple[Connection, _Recorder]:
    transport = _Recorder()
    session = Session(session_limits(Settings()), now=0.0, fmt=WireFormat.JSON, player=name)
    conn = Connection(_OpenSocket(), session, "10.0.0.1", transport)  # type: ignore[arg-type]
    hub.add(conn)
    return conn, transport


def test_held_writes_leave_together_in_order() -> None:
    hub = Hub(1 << 20)
    a, ta = _conn(hub, "a")
    b, tb = _conn(hub, "b")
    first, second = Outgoing({"type": "moved", "v": 1}), Outgoing({"type": "ack", "v": 1})
    hub.begin_gather()
    hub.begin_gather()  # nested: only the outer release writes
    hub.push(a, first)
    hub.push(b, first)
    hub.push(a, second)
    hub.end_gather()
    assert ta.writes == [] and tb.writes == []
    hub.end_gather()
    assert ta.writes == [first.wire(WireFormat.JSON, False) + second.wire(WireFormat.JSON, False)]
    assert tb.writes == [first.wire(WireFormat.JSON, False)]
    hub.push(a, first)  # not held: written at once
    assert len(ta.writes) == 2


def test_a_socket_closed_while_held_gets_nothing() -> None:
    hub = Hub(1 << 20)
    a, ta = _conn(hub, "a")
    hub.begin_gather()
    hub.push(a, Outgoing({"type": "moved", "v": 1}))
    a.abort()
    hub.end_gather()
    assert ta.writes == []


async def test_the_tables_of_one_flush_announce_in_one_write_per_socket(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings],
) -> None:
    """Two tables stored by one write-behind flush: a socket watching both gets both events
    in one transport write (Persistence brackets the stored callbacks with the hub's held
    writes)."""
    hub = Hub(1 << 20)
    watcher, transport = _conn(hub, "w")
    settings = make_settings()
    store = Persistence(redis_client, Keys(settings.key_prefix), settings,
                        gather_writes=hub.gather_writes)
    await store.load_scripts()
    frames = {t: Outgoing({"type": "moved", "table": t, "v": 1}) for t in ("t1", "t2")}

    def announcer(table: str) -> Callable[[int], None]:
        return lambda _version: hub.push(watcher, frames[table])

    for table in frames:
        store.adopt(table, (await store.claim(table, "a", new=True))[0])
        store.append_event(table, 1, b"\x81\xa1v\x01", announcer(table))
    await store.flush()
    assert transport.writes == [frames["t1"].wire(WireFormat.JSON, False)
                                + frames["t2"].wire(WireFormat.JSON, False)]
    await store.stop()

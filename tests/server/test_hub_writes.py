"""The hub's held writes: frames pushed between ``hold_writes`` and ``release_writes`` leave
in push order, one transport write per socket, and a socket closed meanwhile gets none."""

from __future__ import annotations

import asyncio

from server.config import Settings
from server.net.connection import Connection, Hub
from server.net.ws import session_limits
from server.protocol.codec import Outgoing, WireFormat
from server.protocol.session import Session


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
    hub.hold_writes()
    hub.hold_writes()  # nested: only the outer release writes
    hub.push(a, first)
    hub.push(b, first)
    hub.push(a, second)
    hub.release_writes()
    assert ta.writes == [] and tb.writes == []
    hub.release_writes()
    assert ta.writes == [first.wire(WireFormat.JSON, False) + second.wire(WireFormat.JSON, False)]
    assert tb.writes == [first.wire(WireFormat.JSON, False)]
    hub.push(a, first)  # not held: written at once
    assert len(ta.writes) == 2


def test_a_socket_closed_while_held_gets_nothing() -> None:
    hub = Hub(1 << 20)
    a, ta = _conn(hub, "a")
    hub.hold_writes()
    hub.push(a, Outgoing({"type": "moved", "v": 1}))
    a.abort()
    hub.release_writes()
    assert ta.writes == []

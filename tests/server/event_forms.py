"""The full table-event form checked below the socket, in a test whose clients are lean.

Every table event is built once in both forms (``Outgoing.obj``, the full form of protocol 1,
and ``Outgoing.lean``, the change-only form of protocol 2, PROTOCOL.md §5.1), and each socket
is written the one of its form. :class:`FullFormShadow` records what every lean socket of the
test's servers is written (``Hub.push`` and ``Connection.send``) and :meth:`check` replays it
per socket and table, as a lean client holds it (a message with a whole ``state`` sets it,
every change is applied to it): each event's full form must be the lean one with that state
(``full_form``). So a full-form client of the same test would have received exactly the
states its lean clients checked.

A ``sync`` or ``resume`` answer is built for the socket's own form, so only one form of it
exists: the tests about them run over sockets in both forms (``conftest.SOCKET_FORMS``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.net.connection import Connection, Hub
from server.protocol.codec import Outgoing
from server.protocol.lean import apply_event, full_form

State = dict[str, Any] | None


class FullFormShadow:
    """What the lean sockets were written, in order, per socket (``Outgoing``)."""

    def __init__(self) -> None:
        self.written: dict[str, list[Outgoing]] = {}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        push: Callable[[Hub, Connection, Outgoing], None] = Hub.push
        send = Connection.send

        def recorded_push(hub: Hub, conn: Connection, out: Outgoing) -> None:
            writable = conn.is_writable() and not conn.closed
            push(hub, conn, out)
            if writable and conn.session.lean:
                self.written.setdefault(conn.id, []).append(out)

        async def recorded_send(conn: Connection, message: dict[str, Any]) -> None:
            if conn.is_writable() and conn.session.lean:
                self.written.setdefault(conn.id, []).append(Outgoing(message))
            await send(conn, message)

        monkeypatch.setattr(Hub, "push", recorded_push)
        monkeypatch.setattr(Connection, "send", recorded_send)

    def check(self) -> int:
        """Check every two-form event written to a lean socket; returns how many."""
        checked = 0
        for conn, written in self.written.items():
            states: dict[str, State] = {}
            for out in written:
                lean = out.lean if out.lean is not None else out.obj
                table = lean.get("table")
                if not isinstance(table, str):
                    continue
                state = states[table] = apply_event(states.get(table), lean)
                if out.lean is None:
                    continue
                assert full_form(out.lean, state) == out.obj, (conn, table, out.lean)
                checked += 1
        return checked

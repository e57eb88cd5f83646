"""Admission (``server.tables.admission``) on a bare state model: who may join, sit and leave,
and what leaving does; each check changes nothing (pure: no sockets). The machine's own use
of these checks is in ``test_machine_rules.py``."""

from __future__ import annotations

import pytest

from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.messages import TableMode
from server.rules import Side
from server.tables import admission
from server.tables.model import LeaveKind, MachineSettings, Seat, TableState, TableStatus


def table(mode: TableMode = TableMode.COMPETITIVE) -> TableState:
    t = TableState(table_id="t1", mode=mode, match_length=0,
                   tournament_id="cup" if mode is TableMode.TOURNAMENT else None,
                   created_at=0.0, settings=MachineSettings())
    t.seats[0] = Seat("alice", "Alice", False, "a")
    return t


def code(exc: pytest.ExceptionInfo[ProtocolError]) -> str:
    return str(exc.value.code)


def test_a_join_gets_the_free_seat_or_resumes_a_seated_player() -> None:
    t = table()
    assert admission.check_join(t, "bob", is_bot=False) == 1
    assert admission.check_join(t, "alice", is_bot=False) is None
    assert t.seats[1] is None and t.joining is None  # nothing changed


@pytest.mark.parametrize("why", ["playing", "full", "joining", "closed"])
def test_a_table_not_open_to_a_join_is_full(why: str) -> None:
    t = table()
    if why == "playing":
        t.status = TableStatus.PLAYING
    elif why == "full":
        t.seats[1] = Seat("carol", "Carol", False, "c")
    elif why == "joining":
        t.joining = "carol"
    else:
        t.status = TableStatus.CLOSED
    with pytest.raises(ProtocolError) as exc:
        admission.check_join(t, "bob", is_bot=False)
    assert code(exc) == ErrorCode.TABLE_FULL


def test_no_computer_player_at_a_tournament_table() -> None:
    t = table(TableMode.TOURNAMENT)
    with pytest.raises(ProtocolError) as exc:
        admission.check_join(t, "bot-1", is_bot=True)
    assert code(exc) == ErrorCode.BOT_NOT_ALLOWED
    with pytest.raises(ProtocolError) as exc:
        admission.check_seat(t, 1, "bot-1", is_bot=True)
    assert code(exc) == ErrorCode.BOT_NOT_ALLOWED


def test_a_seat_is_free_open_and_taken_once() -> None:
    t = table()
    admission.check_seat(t, 1, "bob", is_bot=False)
    t.joining = "bob"
    admission.check_seat(t, 1, "bob", is_bot=False)  # the player being seated
    for side, player, expected in ((1, "alice", ErrorCode.ALREADY_SEATED),
                                   (0, "bob", ErrorCode.TABLE_FULL),
                                   (2, "bob", ErrorCode.TABLE_FULL),
                                   (1, "carol", ErrorCode.TABLE_FULL)):
        with pytest.raises(ProtocolError) as exc:
            admission.check_seat(t, side, player, is_bot=False)
        assert code(exc) == expected


@pytest.mark.parametrize(("status", "finishing", "kind"), [
    (TableStatus.OPEN, False, LeaveKind.CLOSE),
    (TableStatus.PLAYING, False, LeaveKind.FORFEIT),
    (TableStatus.PLAYING, True, LeaveKind.RELEASE),
    (TableStatus.FINISHED, False, LeaveKind.RELEASE),
])
def test_what_leaving_does(status: TableStatus, finishing: bool, kind: LeaveKind) -> None:
    t = table()
    t.status, t.finishing = status, finishing
    assert admission.leave_kind(t, "alice") == (Side(0), kind)


def test_only_a_seated_player_leaves() -> None:
    with pytest.raises(ProtocolError) as exc:
        admission.leave_kind(table(), "bob")
    assert code(exc) == ErrorCode.NOT_SEATED

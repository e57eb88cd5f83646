"""The state model (``server.tables.model``): a table's readers and what a command did
(pure: no sockets)."""

from __future__ import annotations

from server.protocol.codec import Outgoing
from server.protocol.messages import TableMode
from server.rules import Side
from server.tables import machine
from server.tables.model import (
    CLOCK,
    EMPTY,
    GRACE,
    Deadline,
    Effects,
    MachineSettings,
    Seat,
    TableState,
    merged,
)


def test_a_table_s_readers() -> None:
    t = TableState(table_id="t9", mode=TableMode.COMPETITIVE, match_length=0,
                   tournament_id=None, created_at=0.0, settings=MachineSettings())
    assert t.is_single_game and not t.is_full and t.free_side() == 0
    t.seats[0] = Seat("alice", "Alice", False, "a")
    assert t.side_of("alice") == Side(0) and t.side_of("bob") is None
    assert t.free_side() == 1 and t.seated_players() == ["alice"]
    t.seats[1] = Seat("bob", "Bob", False, "b")
    assert t.is_full and t.free_side() is None
    t.game_no = 2
    assert (t.game_id(), t.match_id()) == ("t9-g2", "t9-m")


def test_effects_merge_in_order_and_keep_the_old_name() -> None:
    assert machine.Step is Effects
    a = Effects((Outgoing({"v": 1}),), (Deadline(CLOCK, 0, 1.0),))
    b = Effects((Outgoing({"v": 2}),), cancelled=(Deadline(GRACE, 1, 2.0),))
    both = merged(a, EMPTY, b)
    assert [o.obj["v"] for o in both.events] == [1, 2]
    assert both.deadlines == a.deadlines and both.cancelled == b.cancelled
    assert merged(EMPTY, a) is a and merged() is EMPTY

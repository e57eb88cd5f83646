"""A cancelled tournament closes its table, whatever is in progress (pure: no sockets)."""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from server.protocol.codec import WireFormat
from server.protocol.messages import TableMode
from server.tables.machine import (
    CLOCK,
    TOURNAMENT_CANCELLED,
    MachineSettings,
    Step,
    TableMachine,
    TableStatus,
)

SETTINGS = MachineSettings(decision_time=30.0, max_strikes=3, grace_period=20.0,
                           next_game_delay=2.0)


class Dice:
    def __init__(self) -> None:
        self.rnd = random.Random(7)

    def roll_die(self) -> int:
        return self.rnd.randint(1, 6)


def playing(tournament_id: str | None = "tn0123456789ab") -> tuple[TableMachine, list[Step]]:
    machine = TableMachine(table_id="t1", mode=TableMode.TOURNAMENT, match_length=3,
                           tournament_id=tournament_id, created_at=0.0, settings=SETTINGS,
                           dice_factory=Dice)
    steps = [machine.seat(side, player, player, is_guest=False, address=f"10.0.0.{side}",
                          nodes={"n1"}, now=1.0) for side, player in enumerate(("ann", "bob"))]
    steps.append(machine.start(2.0))
    return machine, steps


def events(steps: list[Step]) -> list[dict[str, Any]]:
    return [msgpack.unpackb(out.frame(WireFormat.MSGPACK, True))
            for step in steps for out in step.events]


def test_a_game_in_play_ends_with_no_result_and_the_clock_stops() -> None:
    machine, steps = playing()
    assert machine.status is TableStatus.PLAYING and machine.clock is not None
    clock = machine.clock
    step = machine.cancel_tournament(3.0)
    assert machine.status.value == TableStatus.CLOSED.value
    assert [e["type"] for e in events([step])] == ["table_closed"]
    assert events([step])[0]["reason"] == TOURNAMENT_CANCELLED == "tournament_cancelled"
    assert step.settle is None and clock in step.cancelled
    assert all(d.kind != CLOCK for d in step.deadlines)
    # The log replays to the same closed table.
    again = TableMachine.replay(events([*steps, step]), table_id="t1",
                                mode=TableMode.TOURNAMENT, match_length=3,
                                tournament_id="tn0123456789ab", settings=SETTINGS,
                                dice_factory=Dice)
    assert again.status is TableStatus.CLOSED and again.version == machine.version


def test_a_closed_table_stays_closed_and_emits_nothing() -> None:
    machine, _ = playing()
    machine.cancel_tournament(3.0)
    assert machine.cancel_tournament(4.0) == Step()


def test_only_a_tournament_table_can_be_cancelled() -> None:
    machine, _ = playing(tournament_id=None)
    with pytest.raises(ValueError, match="belongs to no tournament"):
        machine.cancel_tournament(3.0)
    assert machine.status is TableStatus.PLAYING

"""A seat's presence events are bounded per game (``presence_events``): however often its
player drops and comes back, the log (and the opponent) gets at most that many, while the
grace period keeps running unannounced and the state keeps saying where the seat is."""

from __future__ import annotations

import random

from server.protocol.messages import TableMode
from server.rules import EndReason
from server.tables.machine import GRACE, MachineSettings, TableMachine, TableStatus

NOW = 1_000_000.0


class Dice:
    def __init__(self) -> None:
        self.rnd = random.Random(4)

    def roll_die(self) -> int:
        return self.rnd.randint(1, 6)


def playing(presence_events: int = 4) -> TableMachine:
    machine = TableMachine(
        table_id="t1", mode=TableMode.COMPETITIVE, match_length=3, tournament_id=None,
        created_at=NOW, settings=MachineSettings(grace_period=20.0,
                                                 presence_events=presence_events),
        dice_factory=Dice,
    )
    for side, player in enumerate(("alice", "bob")):
        machine.seat(side, player, player, is_guest=False, address=f"10.0.0.{side}",
                     nodes={"n1"}, now=NOW)
    machine.start(NOW)
    assert machine.status is TableStatus.PLAYING
    return machine


def kinds(machine: TableMachine, flaps: int, player: str = "bob") -> list[str]:
    out: list[str] = []
    for i in range(flaps):
        for step in (machine.disconnect(player, "n1", NOW + i),
                     machine.connect(player, "n1", NOW + i + 0.5)):
            out.extend(e.obj["type"] for e in step.events) if step is not None else None
    return out


def test_a_hundred_reconnects_add_at_most_presence_events() -> None:
    machine = playing()
    before = machine.version
    assert kinds(machine, 100) == ["player_disconnected", "player_reconnected"] * 2
    assert machine.version - before == 4
    assert machine.seats[1] is not None and machine.seats[1].is_connected


def test_an_unannounced_disconnect_still_runs_the_grace_and_shows_in_the_state() -> None:
    machine = playing(presence_events=0)
    step = machine.disconnect("bob", "n1", NOW)
    assert step.events == () and [d.kind for d in step.deadlines] == [GRACE]
    seat = machine.state()["seats"][1]
    assert seat["connected"] is False and seat["grace_deadline"] == NOW + 20.0
    over = machine.expire(step.deadlines[0], NOW + 20.0)
    game_over = [e.obj for e in over.events if e.obj["type"] == "game_over"]
    assert game_over and game_over[0]["reason"] == str(EndReason.DISCONNECT)


def test_the_reconnect_of_an_announced_disconnect_is_always_announced() -> None:
    machine = playing(presence_events=2)
    assert [e.obj["type"] for e in machine.disconnect("bob", "n1", NOW).events] == \
        ["player_disconnected"]
    step = machine.connect("bob", "n1", NOW + 1)
    assert step is not None and [e.obj["type"] for e in step.events] == ["player_reconnected"]
    assert machine.disconnect("bob", "n1", NOW + 2).events == ()  # the budget is spent
    step = machine.connect("bob", "n1", NOW + 3)
    assert step is not None and step.events == ()


def test_the_replayed_machine_keeps_the_count() -> None:
    settings = MachineSettings(grace_period=20.0, presence_events=4)
    machine = TableMachine(table_id="t1", mode=TableMode.COMPETITIVE, match_length=3,
                           tournament_id=None, created_at=NOW, settings=settings,
                           dice_factory=Dice)
    log: list[dict[str, object]] = []
    steps = [machine.seat(0, "alice", "alice", is_guest=False, address="a", nodes={"n1"},
                          now=NOW),
             machine.seat(1, "bob", "bob", is_guest=False, address="b", nodes={"n1"},
                          now=NOW),
             machine.start(NOW)]
    for i in range(3):
        steps += [machine.disconnect("bob", "n1", NOW + i),
                  machine.connect("bob", "n1", NOW + i + 0.5)]  # type: ignore[list-item]
    for step in steps:
        log.extend(dict(e.lean or e.obj) for e in step.events)
    replayed = TableMachine.replay(log, table_id="t1", mode=TableMode.COMPETITIVE,
                                   match_length=3, settings=settings, dice_factory=Dice)
    seat = replayed.seats[1]
    assert seat is not None and seat.presence_used == 4 and not seat.announced_away
    assert replayed.disconnect("bob", "n1", NOW + 9).events == ()

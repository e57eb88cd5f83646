"""A table held while its node cannot store: :meth:`TableMachine.hold` stops every timer where
it is (no strike, no automatic move, no forfeit), :meth:`TableMachine.resume` goes on with the
time left plus an allowance, and presence changes made during the hold take effect after it.

Direct tests of the pure machine: no sockets, no Redis, no sleeps (the time is an argument).
"""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from server.protocol.codec import WireFormat
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.messages import AcceptResign, Play, Resign, ResignKind, Roll, TableMode
from server.tables.machine import (
    CLOCK,
    EMPTY,
    GRACE,
    HOLD_RETRY_AFTER,
    NEXT_GAME,
    MachineSettings,
    Step,
    TableMachine,
    TableStatus,
)

NOW = 1_000_000.0
SETTINGS = MachineSettings(decision_time=10.0, max_strikes=3, grace_period=20.0)
ALLOWANCE = 5.0


class Dice:
    def __init__(self) -> None:
        self.rnd = random.Random(7)

    def roll_die(self) -> int:
        return self.rnd.randint(1, 6)


class Table:
    """One machine and its log (the lean events, as the driver stores them)."""

    def __init__(self, match_length: int = 0) -> None:
        self.machine = TableMachine(
            table_id="t1", mode=TableMode.COMPETITIVE, match_length=match_length,
            tournament_id=None, created_at=NOW, settings=SETTINGS, dice_factory=Dice)
        self.log: list[dict[str, Any]] = []
        self.match_length = match_length

    def run(self, step: Step | None) -> Step:
        assert step is not None
        for out in step.events:
            self.log.append(msgpack.unpackb(out.frame(WireFormat.MSGPACK, True)))
        return step

    def start(self) -> TableMachine:
        for side, player in enumerate(("alice", "bob")):
            self.run(self.machine.seat(side, player, player, is_guest=False,
                                       address=f"10.0.0.{side}", nodes={"n1"}, now=NOW))
        self.run(self.machine.start(NOW))
        assert self.machine.status is TableStatus.PLAYING
        return self.machine

    def replay(self) -> TableMachine:
        return TableMachine.replay(self.log, table_id="t1", mode=TableMode.COMPETITIVE,
                                   match_length=self.match_length, created_at=NOW,
                                   settings=SETTINGS, dice_factory=Dice)


def kinds(step: Step) -> list[str]:
    return [out.obj["type"] for out in step.events]


def test_a_hold_stops_the_clock_and_says_so_in_the_state() -> None:
    machine = Table().start()
    clock = machine.clock
    assert clock is not None and clock.at == NOW + 10.0
    step = machine.hold(NOW + 4.0)
    assert step.events == () and step.deadlines == () and step.cancelled == (clock,)
    assert machine.state()["held"] == {"since": NOW + 4.0, "clock_left": 6.0}


def test_a_deadline_passing_during_the_hold_costs_nothing() -> None:
    machine = Table().start()
    clock, version = machine.clock, machine.version
    assert clock is not None
    machine.hold(NOW + 4.0)
    assert machine.expire(clock, NOW + 40.0) is EMPTY
    assert machine.strikes == [0, 0] and machine.version == version


def test_an_action_during_the_hold_is_refused_with_retry_after() -> None:
    machine = Table().start()
    to_act = machine.game.to_act if machine.game is not None else None
    player = ("alice", "bob")[int(to_act)] if to_act is not None else "alice"
    machine.hold(NOW + 1.0)
    with pytest.raises(ProtocolError) as refused:
        machine.act(player, Roll(table="t1"), NOW + 2.0)
    assert refused.value.code == ErrorCode.UNAVAILABLE
    assert refused.value.retry_after == HOLD_RETRY_AFTER


def test_resume_gives_the_time_left_plus_the_allowance() -> None:
    machine = Table().start()
    machine.hold(NOW + 4.0)
    step = machine.resume(NOW + 100.0, ALLOWANCE)
    assert kinds(step) == ["resumed"]
    assert step.events[0].obj["since"] == NOW + 4.0 and step.events[0].obj["until"] == NOW + 100.0
    assert [(d.kind, d.at) for d in step.deadlines] == [(CLOCK, NOW + 100.0 + 6.0 + ALLOWANCE)]
    assert machine.deadline == NOW + 111.0
    assert machine.state()["held"] is None and machine.state()["clock"]["deadline"] == NOW + 111.0
    assert machine.strikes == [0, 0]


def test_a_clock_that_ran_out_before_the_hold_was_noticed_gets_the_allowance() -> None:
    machine = Table().start()
    machine.hold(NOW + 12.0)  # the deadline (NOW + 10) passed, its timer not handled yet
    step = machine.resume(NOW + 50.0, ALLOWANCE)
    assert [(d.kind, d.at) for d in step.deadlines] == [(CLOCK, NOW + 50.0 + ALLOWANCE)]


def test_play_goes_on_after_the_resume() -> None:
    machine = Table().start()
    machine.hold(NOW + 1.0)
    machine.resume(NOW + 2.0, ALLOWANCE)
    game = machine.game
    assert game is not None and game.to_act is not None
    player = ("alice", "bob")[int(game.to_act)]
    step = machine.act(player, Play(table="t1", play=tuple(game.legal_plays[0])), NOW + 3.0)
    assert kinds(step) == ["moved"]


def test_a_grace_period_is_held_and_resumed_with_its_time_left() -> None:
    machine = Table().start()
    grace = machine.disconnect("bob", "n1", NOW).deadlines[0]
    assert grace.kind == GRACE and grace.at == NOW + 20.0
    step = machine.hold(NOW + 5.0)
    assert grace in step.cancelled
    assert machine.expire(grace, NOW + 25.0) is EMPTY
    step = machine.resume(NOW + 60.0, ALLOWANCE)
    graces = [d for d in step.deadlines if d.kind == GRACE]
    assert [(d.side, d.at) for d in graces] == [(1, NOW + 60.0 + 15.0 + ALLOWANCE)]
    assert machine.state()["seats"][1]["grace_deadline"] == NOW + 80.0
    over = machine.expire(graces[0], NOW + 80.0)
    assert "game_over" in kinds(over)


def test_a_socket_closing_during_the_hold_starts_the_grace_at_the_resume() -> None:
    machine = Table().start()
    machine.hold(NOW + 1.0)
    assert machine.disconnect("bob", "n1", NOW + 2.0) is EMPTY
    assert machine.state()["seats"][1]["connected"] is False
    step = machine.resume(NOW + 30.0, ALLOWANCE)
    assert kinds(step) == ["resumed", "player_disconnected"]
    assert step.events[1].obj["deadline"] == NOW + 30.0 + 20.0
    assert (GRACE, NOW + 50.0) in [(d.kind, d.at) for d in step.deadlines]


def test_a_player_back_during_the_hold_is_reconnected_at_the_resume() -> None:
    machine = Table().start()
    machine.disconnect("bob", "n1", NOW)
    machine.hold(NOW + 1.0)
    assert machine.connect("bob", "n2", NOW + 2.0) is EMPTY
    step = machine.resume(NOW + 30.0, ALLOWANCE)
    assert kinds(step) == ["resumed", "player_reconnected"]
    assert [d.kind for d in step.deadlines] == [CLOCK]
    seat = machine.state()["seats"][1]
    assert seat["connected"] is True and seat["grace_deadline"] is None


def test_a_socket_that_closes_and_comes_back_during_the_hold_changes_nothing() -> None:
    machine = Table().start()
    machine.hold(NOW + 1.0)
    machine.disconnect("bob", "n1", NOW + 2.0)
    machine.connect("bob", "n1", NOW + 3.0)
    assert kinds(machine.resume(NOW + 4.0, ALLOWANCE)) == ["resumed"]


def test_holding_twice_or_resuming_a_table_not_held_does_nothing() -> None:
    machine = Table().start()
    assert machine.resume(NOW, ALLOWANCE) is EMPTY
    machine.hold(NOW + 1.0)
    assert machine.hold(NOW + 2.0) is EMPTY
    assert machine.state()["held"] == {"since": NOW + 1.0, "clock_left": 9.0}


def test_a_closed_table_is_not_held() -> None:
    table = Table()
    machine = table.machine
    table.run(machine.seat(0, "alice", "alice", is_guest=False, address="10.0.0.1",
                           nodes={"n1"}, now=NOW))
    machine.close("left", NOW + 1.0)
    assert machine.hold(NOW + 2.0) is EMPTY and machine.held is None


def test_a_match_next_game_waits_for_the_resume() -> None:
    table = Table(match_length=3)
    machine = table.start()
    game = machine.game
    assert game is not None and game.to_act is not None
    side = int(game.to_act)
    players = ("alice", "bob")
    machine.act(players[side], Resign(table="t1", kind=ResignKind.SINGLE), NOW + 1.0)
    step = machine.act(players[1 - side], AcceptResign(table="t1"), NOW + 2.0)
    assert step.settle is not None and not step.settle.match_over
    next_game = machine.settled(NOW + 3.0).deadlines[0]
    assert next_game.kind == NEXT_GAME
    assert next_game in machine.hold(NOW + 3.0).cancelled
    assert machine.expire(next_game, NOW + 10.0) is EMPTY
    step = machine.resume(NOW + 20.0, ALLOWANCE)
    assert [(d.kind, d.at) for d in step.deadlines] == [(NEXT_GAME, NOW + 20.0)]
    assert "game_start" in kinds(machine.expire(step.deadlines[0], NOW + 20.0))


def test_the_replayed_machine_has_the_resumed_clock() -> None:
    table = Table()
    machine = table.start()
    machine.hold(NOW + 4.0)
    table.run(machine.disconnect("bob", "n1", NOW + 5.0))
    table.run(machine.resume(NOW + 100.0, ALLOWANCE))
    again = table.replay()
    assert again.version == machine.version
    assert again.state() == machine.state()
    assert again.deadline == machine.deadline == NOW + 111.0
    assert again.logged_at == NOW + 100.0
    # Taken over later: the time left at the last stored event (at most a decision's) goes on.
    step = again.take_over(NOW + 200.0, 10.0, [{"n1"}, set()])
    assert (CLOCK, NOW + 200.0 + 10.0 + 10.0) in [(d.kind, d.at) for d in step.deadlines]

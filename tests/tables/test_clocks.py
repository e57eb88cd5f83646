"""The table's timers (``server.tables.clocks``): which deadlines are armed and disarmed, and
what each does when it fires, through the machine's timer entry (:meth:`TableMachine.expire`)
with the time as an argument: strikes, the forfeit at the last strike, the grace period, a
hold and its resume. Timers are data: no sockets, no event loop, no sleeps.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from server.protocol.messages import AcceptResign, Play, Resign, ResignKind, Roll, TableMode
from server.rules import Phase, Side
from server.tables import clocks
from server.tables.machine import (
    CLOCK,
    EMPTY,
    GRACE,
    NEXT_GAME,
    Deadline,
    Effects,
    MachineSettings,
    Seat,
    TableMachine,
    TableStatus,
)
from server.tables.model import TableState
from tests.tables.test_machine_replay import RandomDice

NOW = 1_000_000.0
SETTINGS = MachineSettings(decision_time=10.0, max_strikes=3, grace_period=20.0,
                           next_game_delay=2.0, node_loss_grace=100.0)
PLAYERS = ("alice", "bob")


def dice() -> RandomDice:
    return RandomDice(random.Random(3))


def playing(match_length: int = 0) -> tuple[TableMachine, Effects]:
    machine = TableMachine(table_id="t1", mode=TableMode.COMPETITIVE,
                           match_length=match_length, tournament_id=None, created_at=NOW,
                           settings=SETTINGS, dice_factory=dice)
    for side, player in enumerate(PLAYERS):
        machine.seat(side, player, player, is_guest=False, address=f"10.0.0.{side}",
                     nodes={"n1"}, now=NOW)
    return machine, machine.start(NOW)


def end_game(machine: TableMachine, now: float) -> Effects:
    """The player to act resigns a single game and the other accepts."""
    game = machine.game
    assert game is not None and game.to_act is not None
    side = int(game.to_act)
    machine.act(PLAYERS[side], Resign(table="t1", kind=ResignKind.SINGLE), now)
    return machine.act(PLAYERS[1 - side], AcceptResign(table="t1"), now)


def kinds(step: Effects) -> list[str]:
    return [out.obj["type"] for out in step.events]


def fields(step: Effects, kind: str) -> dict[str, Any]:
    return next(out.obj for out in step.events if out.obj["type"] == kind)


def test_the_first_decision_arms_the_clock_of_the_side_to_act() -> None:
    machine, step = playing()
    assert machine.game is not None and machine.game.to_act is not None
    clock = machine.clock
    assert clock is not None and step.deadlines == (clock,) and step.cancelled == ()
    assert (clock.kind, clock.side, clock.at) == (CLOCK, int(machine.game.to_act),
                                                  NOW + SETTINGS.decision_time)
    assert machine.state()["clock"]["deadline"] == clock.at


def test_each_decision_replaces_the_clock_and_a_refused_action_keeps_it() -> None:
    machine, _ = playing()
    game = machine.game
    assert game is not None and game.to_act is not None
    first = machine.clock
    player = PLAYERS[game.to_act]
    msg = (Play(table="t1", play=tuple(game.legal_plays[0])) if game.phase is Phase.MOVE
           else Roll(table="t1"))
    step = machine.act(player, msg, NOW + 4.0)
    clock = machine.clock
    assert clock is not None and clock is not first
    # Arming a clock replaces the one armed before: nothing to cancel.
    assert step.deadlines == (clock,) and step.cancelled == ()
    assert clock.at == NOW + 4.0 + SETTINGS.decision_time


def test_a_clock_no_longer_in_force_does_nothing() -> None:
    machine, _ = playing()
    stale = Deadline(CLOCK, 0, NOW + SETTINGS.decision_time)
    before = machine.version
    assert machine.expire(stale, NOW + 50.0) is EMPTY
    assert machine.version == before and machine.strikes == [0, 0]


def test_strikes_count_and_the_third_forfeits_at_the_current_cube() -> None:
    machine, _ = playing()
    now = NOW
    seen: list[tuple[int, str]] = []
    while True:
        clock = machine.clock
        assert clock is not None
        now = clock.at
        side = clock.side
        assert side is not None
        step = machine.expire(clock, now)
        timeout = fields(step, "timeout")
        assert timeout["side"] == side and timeout["strikes"] == machine.strikes[side]
        seen.append((side, timeout["action"]))
        if timeout["action"] == "forfeit":
            break
        # The default action was taken and a fresh clock runs for the next decision.
        assert machine.clock is not None and machine.clock.at == now + SETTINGS.decision_time
        assert machine.clock in step.deadlines
    loser = seen[-1][0]
    assert machine.strikes[loser] == SETTINGS.max_strikes
    actions = [a for s, a in seen if s == loser]
    assert len(actions) == SETTINGS.max_strikes and actions.count("forfeit") == 1
    assert kinds(step)[-1] == "game_over"
    over = fields(step, "game_over")
    assert over["reason"] == "timeout" and over["winner_side"] == 1 - loser
    assert step.settle is not None and step.settle.loser == PLAYERS[loser]
    # The game is over: its clock is gone and nothing is armed to replace it.
    assert machine.clock is None and machine.deadline is None
    assert step.deadlines == () and step.cancelled == ()
    assert machine.status is TableStatus.FINISHED


def test_a_new_game_of_a_match_starts_with_no_strikes() -> None:
    machine, _ = playing(match_length=3)
    clock = machine.clock
    assert clock is not None and clock.side is not None
    machine.expire(clock, clock.at)
    assert sum(machine.strikes) == 1
    assert "game_over" in kinds(end_game(machine, NOW + 20.0))
    step = machine.settled(NOW + 21.0)
    next_game = machine.next_game
    assert next_game is not None and step.deadlines == (next_game,)
    assert (next_game.kind, next_game.at) == (NEXT_GAME, NOW + 21.0 + SETTINGS.next_game_delay)
    step = machine.expire(next_game, next_game.at)
    assert "game_start" in kinds(step) and machine.strikes == [0, 0]
    assert machine.clock is not None and step.deadlines == (machine.clock,)


def test_the_grace_period_is_armed_at_the_last_socket_and_forfeits_when_it_ends() -> None:
    machine, _ = playing()
    step = machine.disconnect("bob", "n1", NOW + 1.0)
    seat = machine.seats[1]
    assert seat is not None and seat.grace is not None
    assert step.deadlines == (seat.grace,)
    assert (seat.grace.kind, seat.grace.side, seat.grace.at) == (GRACE, 1, NOW + 21.0)
    step = machine.expire(seat.grace, NOW + 21.0)
    over = fields(step, "game_over")
    assert over["reason"] == "disconnect" and over["loser"] == "bob"
    # The decision clock stops with the game.
    assert machine.clock is None


def test_coming_back_disarms_the_grace_and_its_end_does_nothing() -> None:
    machine, _ = playing()
    grace = machine.disconnect("bob", "n1", NOW + 1.0).deadlines[0]
    back = machine.connect("bob", "n2", NOW + 5.0)
    assert back is not None and back.cancelled == (grace,) and back.deadlines == ()
    assert machine.expire(grace, NOW + 21.0) is EMPTY
    assert machine.status is TableStatus.PLAYING


def test_the_node_loss_grace_runs_from_when_the_node_was_found_dead() -> None:
    assert clocks.grace_seconds(SETTINGS, NOW, None) == SETTINGS.grace_period
    assert clocks.grace_seconds(SETTINGS, NOW, NOW - 30.0) == 70.0
    # Found dead long ago: never less than the usual grace.
    assert clocks.grace_seconds(SETTINGS, NOW, NOW - 500.0) == SETTINGS.grace_period


def test_a_hold_disarms_every_timer_and_no_timer_fires_while_held() -> None:
    machine, _ = playing()
    machine.disconnect("bob", "n1", NOW + 1.0)
    clock, seat = machine.clock, machine.seats[1]
    assert clock is not None and seat is not None and seat.grace is not None
    grace = seat.grace
    step = machine.hold(NOW + 4.0)
    assert step.events == () and step.deadlines == ()
    assert set(step.cancelled) == {clock, grace}
    assert machine.expire(clock, clock.at) is EMPTY
    assert machine.expire(grace, grace.at) is EMPTY
    assert machine.strikes == [0, 0] and machine.status is TableStatus.PLAYING


def test_resume_rearms_with_the_time_left_plus_the_allowance_and_the_clock_strikes() -> None:
    machine, _ = playing()
    clock = machine.clock
    assert clock is not None and clock.side is not None
    machine.hold(NOW + 4.0)  # 6 s left
    step = machine.resume(NOW + 100.0, 5.0)
    resumed = machine.clock
    assert resumed is not None and step.deadlines == (resumed,) and step.cancelled == ()
    assert resumed.at == NOW + 100.0 + 6.0 + 5.0 and resumed.side == clock.side
    assert kinds(step) == ["resumed"]
    assert machine.expire(clock, resumed.at) is EMPTY  # the one from before the hold
    step = machine.expire(resumed, resumed.at)
    assert fields(step, "timeout")["strikes"] == 1


def test_timers_reconcile_what_is_in_force_with_what_is_armed() -> None:
    table = TableState(table_id="t1", mode=TableMode.COMPETITIVE, match_length=0,
                       tournament_id=None, created_at=NOW, settings=SETTINGS)
    table.seats = [Seat("alice", "alice", False, ""), Seat("bob", "bob", False, "")]
    timers = clocks.Timers()
    assert timers.reconcile(table) == ((), ())
    table.clock = first = Deadline(CLOCK, 0, NOW + 10.0)
    assert timers.reconcile(table) == ((first,), ())
    assert timers.reconcile(table) == ((), ())
    seat = table.seats[1]
    assert seat is not None
    clocks.start_grace(seat, 1, NOW + 20.0)
    table.clock = second = Deadline(CLOCK, 1, NOW + 12.0)
    grace = seat.grace
    assert grace is not None and seat.grace_deadline == NOW + 20.0
    assert timers.reconcile(table) == ((second, grace), ())
    table.held = clocks.hold_timers(table, NOW + 2.0)
    assert table.held.clock_left == 10.0 and table.held.grace_left == {1: 18.0}
    assert timers.reconcile(table) == ((), (second, grace))
    held, table.held = table.held, None
    table.clock_side = Side(1)
    assert clocks.resume_timers(table, held, NOW + 50.0, 1.0) == []  # bob is still away
    assert table.clock is not None and table.clock.at == NOW + 50.0 + 10.0 + 1.0
    assert seat.grace is not None and seat.grace.at == NOW + 50.0 + 18.0 + 1.0
    arm, cancel = timers.reconcile(table)
    assert arm == (table.clock, seat.grace) and cancel == ()
    # A timer that went off is no longer armed: in force again, it is armed again.
    timers.fired(table.clock)
    assert timers.reconcile(table) == ((table.clock,), ())
    clocks.stop_clock(table)
    clocks.stop_graces(table)
    assert timers.reconcile(table)[1] == (arm[0], arm[1])
    timers.forget()
    table.clock = first
    assert timers.reconcile(table) == ((first,), ())


def test_a_strike_says_when_it_forfeits() -> None:
    table = TableState(table_id="t1", mode=TableMode.COMPETITIVE, match_length=0,
                       tournament_id=None, created_at=NOW, settings=SETTINGS)
    assert [clocks.strike(table, Side(0)) for _ in range(3)] == [False, False, True]
    assert table.strikes == [3, 0]


@pytest.mark.parametrize("held", [False, True])
def test_a_match_s_next_game_is_a_timer_too(held: bool) -> None:
    machine, _ = playing(match_length=3)
    end_game(machine, NOW + 1.0)
    if held:
        machine.hold(NOW + 1.5)
        assert machine.settled(NOW + 2.0).deadlines == ()  # armed at the resume
        step = machine.resume(NOW + 10.0, 5.0)
    else:
        step = machine.settled(NOW + 2.0)
    next_game = machine.next_game
    assert next_game is not None and next_game in step.deadlines
    assert "game_start" in kinds(machine.expire(next_game, next_game.at))

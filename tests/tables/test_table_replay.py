"""The replay (``server.tables.replay``) rebuilds a machine from outside: the logged commands
go through the machine's own commands, what only the log knows goes to the state model, and
nothing is armed until the shell asks (pure: no sockets). The property that ``replay(log)``
is the live machine after every step of random tables is in ``test_machine_replay.py``."""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from server.protocol.codec import WireFormat
from server.protocol.messages import AcceptResign, Resign, ResignKind, TableMode
from server.rules import RulesError
from server.tables import replay
from server.tables.machine import GRACE, Effects, MachineSettings, TableMachine
from tests.tables.test_machine_replay import RandomDice

NOW = 1_000_000.0
SETTINGS = MachineSettings(decision_time=10.0, max_strikes=3, grace_period=20.0)
PLAYERS = ("alice", "bob")


def dice() -> RandomDice:
    return RandomDice(random.Random(11))


class Live:
    """A machine and its log."""

    def __init__(self, match_length: int = 0) -> None:
        self.match_length = match_length
        self.machine = TableMachine(table_id="t1", mode=TableMode.COMPETITIVE,
                                    match_length=match_length, tournament_id=None,
                                    created_at=NOW, settings=SETTINGS, dice_factory=dice)
        self.log: list[dict[str, Any]] = []
        for side, player in enumerate(PLAYERS):
            self.run(self.machine.seat(side, player, player, is_guest=False,
                                       address=f"10.0.0.{side}", nodes={"n1"}, now=NOW))
        self.run(self.machine.start(NOW))

    def run(self, step: Effects | None) -> Effects:
        assert step is not None
        self.log.extend(msgpack.unpackb(o.frame(WireFormat.MSGPACK, True)) for o in step.events)
        return step

    def replay(self, log: list[dict[str, Any]] | None = None) -> TableMachine:
        return replay.replay(TableMachine, self.log if log is None else log, table_id="t1",
                             mode=TableMode.COMPETITIVE, match_length=self.match_length,
                             settings=SETTINGS, dice_factory=dice, created_at=NOW)

    def resign(self, now: float) -> None:
        game = self.machine.game
        assert game is not None and game.to_act is not None
        side = int(game.to_act)
        self.run(self.machine.act(PLAYERS[side], Resign(table="t1", kind=ResignKind.SINGLE),
                                  now))
        self.run(self.machine.act(PLAYERS[1 - side], AcceptResign(table="t1"), now))


def test_a_replayed_machine_is_the_live_one_and_has_nothing_armed() -> None:
    live = Live()
    m = live.machine
    assert m.clock is not None
    live.run(m.expire(m.clock, m.clock.at))  # a strike
    live.run(m.disconnect("bob", "n1", NOW + 12.0))
    again = live.replay()
    assert isinstance(again, TableMachine)
    assert again.state() == m.state() and again.version == m.version
    assert again.strikes == m.strikes and again.clock == m.clock
    seat = again.seats[1]
    assert seat is not None and seat.grace == live.machine.seats[1].grace  # type: ignore[union-attr]
    assert seat.presence_used == 2 and seat.announced_away and not seat.is_connected
    assert again.timers.armed == (None, None, None, None)
    assert again.events.out == [] and again.logged_at is not None


def test_a_grace_running_while_a_game_is_settled_is_armed_at_the_takeover() -> None:
    live = Live(match_length=3)
    live.run(live.machine.disconnect("bob", "n1", NOW + 1.0))
    live.resign(NOW + 2.0)
    assert live.machine.finishing and live.machine.seats[1] is not None
    again = live.replay()
    assert again.finishing and again.settlement is not None
    step = again.take_over(NOW + 50.0, 5.0, present=[{"n1"}, set()])
    graces = [d for d in step.deadlines if d.kind == GRACE]
    assert [(d.side, d.at) for d in graces] == [(1, NOW + 1.0 + SETTINGS.grace_period)]


def test_the_log_must_fit_together() -> None:
    live = Live()
    live.resign(NOW + 1.0)
    log = live.log
    with pytest.raises(ValueError, match="follows"):
        live.replay(log[:3] + log[4:])
    with pytest.raises(ValueError, match="no game_start"):
        live.replay([e for e in log if e["type"] != "game_start" and e["v"] > 2])
    with pytest.raises(ValueError, match="unknown event type"):
        live.replay([*log, {"type": "surprise", "v": log[-1]["v"] + 1, "table": "t1"}])


def test_the_replay_dice_are_only_those_fed() -> None:
    dice = replay.ReplayDice()
    dice.feed([3, 4], None, (6, 6))
    assert [dice.roll_die() for _ in range(4)] == [3, 4, 6, 6]
    with pytest.raises(RulesError):
        dice.roll_die()

"""The table machine is a pure function of its events: random games (rolls, plays, doubles,
takes, drops, resignations, time-outs, disconnects and reconnects, leaves, matches of several
games) are driven through :class:`TableMachine` with fake times, and after every step
``TableMachine.replay(log)`` has the live machine's state, version, strikes, clock and score.

No sockets, no Redis, no event loop: the log is the lean events as the driver stores them
(the msgpack bytes of the lean form, decoded).
"""

from __future__ import annotations

import random
import subprocess
import sys
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.protocol.codec import WireFormat
from server.protocol.errors import ProtocolError
from server.protocol.messages import (
    AcceptResign,
    Double,
    Drop,
    Message,
    Play,
    RejectResign,
    Resign,
    ResignKind,
    Roll,
    TableMode,
    Take,
)
from server.rules import EndReason, Phase, format_play
from server.tables.machine import (
    CLOCK,
    GRACE,
    NEXT_GAME,
    Deadline,
    MachineSettings,
    Step,
    TableMachine,
    TableStatus,
)

SETTINGS = MachineSettings(decision_time=30.0, max_strikes=3, grace_period=20.0,
                           next_game_delay=2.0)
PLAYERS = ("alice", "bob")


def wire(value: Any) -> Any:
    """``value`` as it goes out (tuples are arrays)."""
    return msgpack.unpackb(msgpack.packb(value))


class RandomDice:
    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd

    def roll_die(self) -> int:
        return self.rnd.randint(1, 6)


class Harness:
    """Drives one machine the way the driver does, keeping the log and the timers."""

    def __init__(self, rnd: random.Random, match_length: int, mode: TableMode) -> None:
        self.rnd = rnd
        self.now = 1_000_000.0
        self.match_length = match_length
        self.mode = mode
        self.machine = TableMachine(
            table_id="t1", mode=mode, match_length=match_length, tournament_id=None,
            created_at=self.now, settings=SETTINGS, dice_factory=lambda: RandomDice(rnd),
        )
        self.log: list[dict[str, Any]] = []
        self.timers: dict[tuple[str, int | None], Deadline] = {}
        self.settling = False
        self.steps = 0
        self.calm = False

    def run(self, step: Step | None) -> None:
        if step is None:
            return
        for out in step.events:
            self.log.append(msgpack.unpackb(out.frame(WireFormat.MSGPACK, True)))
        for deadline in step.deadlines:
            self.timers[(deadline.kind, deadline.side if deadline.kind == GRACE else None)] = \
                deadline
        for deadline in step.cancelled:
            key = (deadline.kind, deadline.side if deadline.kind == GRACE else None)
            if self.timers.get(key) is deadline:
                del self.timers[key]
        if step.settle is not None:
            self.settling = True
        self.steps += 1

    def replay(self, events: list[dict[str, Any]] | None = None) -> TableMachine:
        return TableMachine.replay(
            self.log if events is None else events, table_id="t1", mode=self.mode,
            match_length=self.match_length, created_at=1_000_000.0, settings=SETTINGS,
            dice_factory=lambda: RandomDice(random.Random(0)),
        )

    def check(self) -> None:
        live = self.machine
        again = self.replay()
        assert again.version == live.version
        assert again.state() == live.state(), (self.log[-3:], again.state(), live.state())
        # The next event's changes are made against the state the clients hold.
        assert wire(again.last_state) == wire(live.last_state)
        assert again.strikes == live.strikes
        assert again.deadline == live.deadline
        assert again.status is live.status
        if live.match is not None:
            assert again.match is not None and again.match.score == live.match.score
        # A game's end is in the log; its settlement is not (the results are): a replayed
        # table whose match is over comes back asking for it, and the shell checks.
        if live.settlement is not None:
            s, t = again.settlement, live.settlement
            assert s is not None
            assert (s.game_id, s.winner, s.loser, s.outcome, s.match_over, s.game_counted) == \
                (t.game_id, t.winner, t.loser, t.outcome, t.match_over, t.game_counted)
            assert s.result == {**t.result, "finished_at": s.finished_at}
        elif again.settlement is not None:
            # Settled since (between two games of a match, or at its end): not in the log.
            assert again.settlement.game_id == live.game_id()
            assert live.game is not None and live.game.is_over
        if live.clock is not None:
            assert again.clock == live.clock

    # --- what can happen next -------------------------------------------------------------

    def actions(self) -> list[str]:
        m = self.machine
        if m.status is TableStatus.OPEN:
            return ["join", "disconnect_0", "reconnect_0", "grace", "close"]
        if m.status is not TableStatus.PLAYING and not self.settling:
            return []
        if self.settling:
            return ["settled", "illegal"]
        rare = self.rnd.random() < 0.05
        out = ["reconnect_0", "reconnect_1"]
        if rare:
            out += ["disconnect_0", "disconnect_1", "leave"]
        live = m.game is not None and not m.game.is_over  # else between a match's games
        if ("grace", 0) in self.timers or ("grace", 1) in self.timers:
            out += ["grace"] if rare or not live else ["act"]
        if live:
            out += ["act"] * 12 + ["timeout", "illegal"]
        if (NEXT_GAME, None) in self.timers:
            out += ["next_game"] * 4
        return out

    def act(self) -> None:
        m = self.machine
        game = m.game
        assert game is not None
        side = game.to_act
        assert side is not None
        player = PLAYERS[side]
        rnd = self.rnd
        msg: Message
        if self.calm:  # just rolls and plays
            if game.phase is Phase.MOVE:
                msg = Play(table="t1", play=tuple(rnd.choice(game.legal_plays)))
            else:
                msg = Take(table="t1") if game.phase is Phase.DOUBLE_OFFERED else Roll(table="t1")
        elif game.phase is Phase.ROLL:
            choice = rnd.random()
            if game.can_double(side) and choice < 0.25:
                msg = Double(table="t1")
            elif choice < 0.28:
                msg = Resign(table="t1", kind=rnd.choice(list(ResignKind)))
            else:
                msg = Roll(table="t1")
        elif game.phase is Phase.MOVE:
            if rnd.random() < 0.02:
                msg = Resign(table="t1", kind=ResignKind.SINGLE)
            else:
                plays = game.legal_plays
                chosen = rnd.choice(plays)
                if rnd.random() < 0.5:
                    msg = Play(table="t1", play=format_play(chosen, game.position))
                else:
                    msg = Play(table="t1", play=tuple(chosen))
        elif game.phase is Phase.DOUBLE_OFFERED:
            msg = Take(table="t1") if rnd.random() < 0.7 else Drop(table="t1")
        else:
            msg = AcceptResign(table="t1") if rnd.random() < 0.4 else RejectResign(table="t1")
        self.run(m.act(player, msg, self.now))

    def do(self, what: str) -> None:
        m = self.machine
        rnd = self.rnd
        self.now += rnd.uniform(0.0, 4.0)
        if what == "join":
            self.run(m.seat(1, "bob", "Bob", is_guest=False, address="10.0.0.2",
                            nodes={"n2"}, now=self.now))
            self.run(m.start(self.now))
        elif what.startswith("disconnect_"):
            side = int(what[-1])
            seat = m.seats[side]
            if seat is not None and seat.nodes:
                self.run(m.disconnect(seat.player, next(iter(seat.nodes)), self.now))
        elif what.startswith("reconnect_"):
            side = int(what[-1])
            seat = m.seats[side]
            if seat is not None and not seat.nodes and seat.grace is not None:
                self.run(m.connect(seat.player, f"n{rnd.randint(1, 3)}", self.now))
        elif what == "grace":
            graces = [d for k, d in self.timers.items() if k[0] == GRACE]
            if graces:
                deadline = rnd.choice(graces)
                self.now = max(self.now, deadline.at)
                del self.timers[(GRACE, deadline.side)]
                self.run(m.expire(deadline, self.now))
        elif what == "close":
            self.run(m.close("left", self.now))
        elif what == "act":
            self.act()
        elif what == "timeout":
            clock = self.timers.pop((CLOCK, None), None)
            if clock is not None:
                assert clock is m.clock
                self.now = max(self.now, clock.at)
                self.run(m.expire(clock, self.now))
        elif what == "illegal":
            before = m.version
            game = m.game
            if self.settling or game is None or game.phase is not Phase.DOUBLE_OFFERED:
                player = rnd.choice(PLAYERS)  # wrong phase, or the game is over
            else:
                player = "carol"  # not seated
            with pytest.raises(ProtocolError):
                m.act(player, Take(table="t1"), self.now)
            assert m.version == before
        elif what == "leave":
            self.run(m.forfeit(rnd.choice(PLAYERS), EndReason.LEAVE, self.now))
        elif what == "settled":
            self.settling = False
            self.run(m.settled(self.now))
        elif what == "next_game":
            deadline = self.timers.pop((NEXT_GAME, None))
            self.now = max(self.now, deadline.at)
            self.run(m.expire(deadline, self.now))


def calm_game(seed: int, moves: int) -> Harness:
    """A single game of ``moves`` rolls and plays, nobody away, still going."""
    h = Harness(random.Random(seed), 0, TableMode.COMPETITIVE)
    h.calm = True
    h.run(h.machine.seat(0, "alice", "Alice", is_guest=False, address="10.0.0.1", nodes={"n1"},
                         now=h.now))
    h.do("join")
    for _ in range(moves):
        h.do("act")
    h.check()
    assert h.machine.game is not None and not h.machine.game.is_over
    return h


def play(rnd: random.Random, match_length: int, mode: TableMode, max_steps: int = 500
         ) -> Harness:
    h = Harness(rnd, match_length, mode)
    h.run(h.machine.seat(0, "alice", "Alice", is_guest=False, address="10.0.0.1", nodes={"n1"},
                         now=h.now))
    h.check()
    if rnd.random() < 0.9:
        h.do("join")
        h.check()
    for _ in range(max_steps):
        actions = h.actions()
        if not actions:
            break
        h.do(rnd.choice(actions))
        h.check()
    return h


def test_the_random_games_cover_every_kind_of_event() -> None:
    kinds: set[str] = set()
    games = 0
    for seed in range(12):
        h = play(random.Random(seed), [0, 3, 5][seed % 3], TableMode.COMPETITIVE)
        kinds.update(e["type"] for e in h.log)
        games += sum(1 for e in h.log if e["type"] == "game_start")
    assert kinds >= {
        "seated", "game_start", "rolled", "moved", "doubled", "taken", "dropped",
        "resign_offered", "resign_rejected", "timeout", "player_disconnected",
        "player_reconnected", "game_over", "match_over",
    }, kinds
    assert games > 12  # matches of several games


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1),
       match_length=st.sampled_from([0, 0, 1, 3, 5]),
       mode=st.sampled_from([TableMode.COMPETITIVE, TableMode.BOOSTED, TableMode.PRIVATE]))
def test_replaying_the_log_gives_the_live_machine_after_every_step(
    seed: int, match_length: int, mode: TableMode
) -> None:
    # The seed drives every choice (commands, dice, times): a failure names it.
    play(random.Random(seed), match_length, mode)


@pytest.mark.parametrize("seed", range(6))
def test_a_trimmed_log_replays_from_its_last_game_start(seed: int) -> None:
    h = play(random.Random(seed), 7, TableMode.COMPETITIVE, max_steps=600)
    starts = [i for i, e in enumerate(h.log) if e["type"] == "game_start"]
    for start in starts:
        again = h.replay(h.log[start:])
        assert again.version == h.machine.version
        assert again.state() == h.machine.state()
        assert h.machine.match is not None and again.match is not None
        assert again.match.score == h.machine.match.score


def test_a_replayed_machine_goes_on_at_the_next_version_with_new_dice() -> None:
    h = calm_game(11, 30)
    again = h.replay()
    assert again.clock is not None
    step = again.expire(again.clock, again.clock.at)
    assert step.events and step.events[0].obj["type"] == "timeout"
    assert step.events[0].obj["v"] == h.machine.version + 1


def test_take_over_gives_the_time_left_plus_the_allowance_and_puts_everyone_in_grace(
) -> None:
    h = calm_game(3, 20)
    live = h.machine
    assert live.clock is not None and live.deadline is not None
    again = h.replay()
    left = live.deadline - (again.logged_at or 0.0)
    assert 0 < left <= SETTINGS.decision_time
    later = h.now + 100.0  # the old owner died a while ago
    step = again.take_over(later, 10.0)
    assert not step.events
    assert again.deadline == pytest.approx(later + left + 10.0)
    kinds = sorted(d.kind for d in step.deadlines)
    assert kinds == [CLOCK, GRACE, GRACE]
    for seat in again.seats:
        assert seat is not None and not seat.nodes and seat.grace_deadline == later + 20.0
    # The player to act comes back and plays: the next event is the log's last + 1.
    side = again.clock.side if again.clock is not None else None
    assert side is not None
    back = again.connect(PLAYERS[side], "n9", later + 1)
    assert back is not None
    step = back
    assert [e.obj["type"] for e in step.events] == ["player_reconnected"]
    assert step.events[0].obj["v"] == live.version + 1


def test_a_game_over_in_the_log_comes_back_unsettled_until_settled() -> None:
    h = calm_game(5, 1)
    while not h.settling:
        h.do("act")
    again = h.replay()
    live = h.machine
    assert again.state() == live.state() and again.version == live.version
    assert again.settlement is not None and again.finishing
    assert live.settlement is not None and again.settlement.game_id == live.settlement.game_id
    assert again.status is TableStatus.FINISHED
    with pytest.raises(ProtocolError):
        again.act("alice", Roll(table="t1"), h.now)
    again.settled(h.now)
    assert again.settlement is None


def test_the_machine_imports_no_io() -> None:
    code = (
        "import sys, server.tables, server.tables.machine;"
        "print(sorted(m for m in ('asyncio', 'aiohttp', 'redis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_machine_knows_the_player_id_prefixes_the_accounts_issue() -> None:
    from server.protocol import ids
    from server.tables import machine

    assert machine.GUEST_PREFIX == ids.GUEST_PREFIX
    assert machine.BOT_PREFIX == ids.BOT_PREFIX

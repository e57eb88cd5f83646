"""Each event's lean ``changes`` are built from what the step changed
(``EventBuilder.built_changes``, ``Game.snapshot_changes``), not by building the whole state
and diffing it: they must be exactly what diffing gives (``server.protocol.lean
.state_changes``, kept as the reference and for the events after a handout).

Random tables (rolls, plays, doubles, takes, drops, resignations, time-outs and strikes,
disconnects, reconnects, leaves and forfeits, holds and resumes, take-overs, ``sync``
handouts between events, matches of several games) are driven through two machines given
the same commands, dice and times: one builds its changes, the other (``events.direct = False``)
diffs whole states for every event. Every event must be the same bytes, in both forms and
both wire formats, and so must every step's timers, settlement and handout.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from server.protocol.codec import Outgoing, WireFormat
from server.protocol.lean import apply_event, state_changes
from server.protocol.messages import TableMode
from server.rules import Game, Phase
from server.tables.machine import (
    CLOCK,
    GRACE,
    NEXT_GAME,
    Deadline,
    FinishedGame,
    Step,
    TableMachine,
    TableStatus,
)
from tests.tables.test_machine_replay import SETTINGS, Harness, RandomDice

ALLOWANCE = 5.0


def same_event(a: Outgoing, b: Outgoing) -> None:
    for fmt in (WireFormat.JSON, WireFormat.MSGPACK):
        assert a.frame(fmt) == b.frame(fmt)
        assert a.frame(fmt, True) == b.frame(fmt, True), (a.lean, b.lean)
    assert (a.lean is None) == (b.lean is None)


def same(a: Any, b: Any) -> None:
    """What the two machines answered is the same (events byte for byte)."""
    if isinstance(a, Step):
        assert isinstance(b, Step)
        assert len(a.events) == len(b.events), ([e.obj for e in a.events],
                                                [e.obj for e in b.events])
        for x, y in zip(a.events, b.events, strict=True):
            same_event(x, y)
        assert a.deadlines == b.deadlines
        assert a.cancelled == b.cancelled
        assert a.settle == b.settle
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    elif isinstance(a, FinishedGame | dict) or a is None:
        assert a == b
    else:
        assert a == b, (a, b)


class Twin:
    """Two machines as one: every call goes to both (the built one first) and must answer
    the same; attributes are read from the built one."""

    def __init__(self, built: TableMachine, diffed: TableMachine) -> None:
        self.built = built
        self.diffed = diffed
        self.events = 0

    def mirror(self, deadline: Deadline) -> Deadline:
        """The diffed machine's deadline for the built machine's ``deadline``."""
        a, b = self.built, self.diffed
        if deadline.kind == CLOCK and deadline is a.clock:
            assert b.clock is not None
            return b.clock
        if deadline.kind == NEXT_GAME and deadline is a.next_game:
            assert b.next_game is not None
            return b.next_game
        if deadline.kind == GRACE and deadline.side is not None:
            seat, other = a.seats[deadline.side], b.seats[deadline.side]
            if seat is not None and seat.grace is deadline:
                assert other is not None and other.grace is not None
                return other.grace
        return Deadline(deadline.kind, deadline.side, deadline.at)  # in force on neither

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.built, name)
        if not callable(value):
            return value
        other: Callable[..., Any] = getattr(self.diffed, name)

        def both(*args: Any, **kwargs: Any) -> Any:
            mirrored = [self.mirror(x) if isinstance(x, Deadline) else x for x in args]
            try:
                answer = value(*args, **kwargs)
            except Exception as exc:
                with pytest.raises(type(exc)):
                    other(*mirrored, **kwargs)
                raise
            same(answer, other(*mirrored, **kwargs))
            if isinstance(answer, Step):
                self.events += len(answer.events)
            return answer

        return both


class TwinHarness(Harness):
    """The replay tests' random driver over a :class:`Twin`, with holds, take-overs and
    handouts between events."""

    def __init__(self, seed: int, match_length: int, mode: TableMode) -> None:
        super().__init__(random.Random(seed), match_length, mode)

        def machine(direct: bool) -> TableMachine:
            dice = random.Random(seed + 1)
            m = TableMachine(table_id="t1", mode=mode, match_length=match_length,
                             tournament_id=None, created_at=self.now, settings=SETTINGS,
                             dice_factory=lambda: RandomDice(dice))
            m.events.direct = direct
            return m

        self.twin = Twin(machine(True), machine(False))
        self.machine = self.twin  # type: ignore[assignment]
        self.handouts = self.holds = self.take_overs = 0

    def extras(self) -> list[str]:
        """What may happen besides the replay tests' actions (before the next of those)."""
        m = self.machine
        rnd = self.rnd
        out = ["handout"] if rnd.random() < 0.06 else []
        if m.status in (TableStatus.OPEN, TableStatus.PLAYING) and m.held is None:
            if rnd.random() < 0.02:
                out.append("hold")
            if rnd.random() < 0.01:
                out.append("take_over")
        return out

    def do(self, what: str) -> None:
        m = self.machine
        rnd = self.rnd
        if what == "handout":
            self.handouts += 1
            m.handout()
        elif what == "hold":
            self.holds += 1
            self.now += rnd.uniform(0.0, 3.0)
            self.run(m.hold(self.now))
            for _ in range(rnd.randint(0, 3)):  # presence changes wait for the resume
                self.now += rnd.uniform(0.0, 3.0)
                side = rnd.randint(0, 1)
                seat = m.seats[side]
                if seat is None:
                    continue
                if seat.nodes and rnd.random() < 0.6:
                    self.run(m.disconnect(seat.player, next(iter(seat.nodes)), self.now))
                else:
                    self.run(m.connect(seat.player, f"n{rnd.randint(1, 3)}", self.now))
            if rnd.random() < 0.3:
                m.handout()
            self.now += rnd.uniform(0.0, 10.0)
            self.run(m.resume(self.now, ALLOWANCE))
        elif what == "take_over":
            self.take_overs += 1
            self.now += rnd.uniform(0.0, 5.0)
            present = [set() if rnd.random() < 0.4 else {"n2"} for _ in range(2)]
            lost = [None if rnd.random() < 0.5 else self.now - 3.0 for _ in range(2)]
            self.run(m.take_over(self.now, ALLOWANCE, present, lost))
        else:
            super().do(what)


def play(seed: int, match_length: int, mode: TableMode, steps: int = 400) -> TwinHarness:
    h = TwinHarness(seed, match_length, mode)
    h.run(h.machine.seat(0, "alice", "Alice", is_guest=False, address="10.0.0.1",
                         nodes={"n1"}, now=h.now))
    if h.rnd.random() < 0.95:
        h.do("join")
    for _ in range(steps):
        actions = h.actions()
        if not actions:
            break
        for extra in h.extras():
            h.do(extra)
        h.do(h.rnd.choice(actions))
    return h


def calm(seed: int, moves: int) -> TwinHarness:
    """Twins in a single game of ``moves`` rolls and plays, nobody away."""
    h = TwinHarness(seed, 0, TableMode.COMPETITIVE)
    h.calm = True
    h.run(h.machine.seat(0, "alice", "Alice", is_guest=False, address="10.0.0.1",
                         nodes={"n1"}, now=h.now))
    h.do("join")
    for _ in range(moves):
        h.do("act")
    return h


@pytest.mark.parametrize("chunk", range(4))
def test_built_changes_are_the_diffed_ones_byte_for_byte(chunk: int) -> None:
    events = handouts = holds = take_overs = 0
    kinds: set[str] = set()
    for seed in range(chunk * 40, chunk * 40 + 40):
        mode = (TableMode.COMPETITIVE, TableMode.BOOSTED, TableMode.PRIVATE)[seed % 3]
        h = play(seed, (0, 0, 1, 3, 5)[seed % 5], mode)
        events += h.twin.events
        handouts += h.handouts
        holds += h.holds
        take_overs += h.take_overs
        kinds.update(e["type"] for e in h.log)
    assert events > 1000 and handouts > 50, (events, handouts)
    assert kinds >= {
        "seated", "game_start", "rolled", "moved", "doubled", "taken", "dropped",
        "resign_offered", "resign_rejected", "timeout", "player_disconnected",
        "player_reconnected", "game_over", "match_over", "resumed",
    }, kinds
    assert holds > 10 and take_overs > 5, (holds, take_overs)


def test_an_event_that_leaves_the_game_alone_keeps_its_snapshot() -> None:
    """Built, not diffed: a reconnect changes the seats only; the game's part of the state is
    the previous event's (diffing would have built a new one)."""
    h = calm(3, 5)
    built = h.twin.built
    before = built.last_state
    assert before is not None
    h.run(built.disconnect("bob", "n2", h.now + 1))
    during = built.last_state
    assert during is not None and during["game"] is before["game"]
    h.run(built.connect("bob", "n3", h.now + 2))
    after = built.last_state
    assert after is not None and after["game"] is before["game"]
    assert h.log[-1]["changes"].keys() == {"seats"}


@pytest.mark.parametrize("seed", range(30))
def test_a_games_snapshot_changes_are_what_diffing_its_snapshots_finds(seed: int) -> None:
    rnd = random.Random(seed)
    game = Game(dice=RandomDice(rnd))
    before = game.to_dict()
    game.start()
    for _ in range(400):
        built = game.snapshot_changes(before)
        assert built is not None
        snapshot, changes = built
        full = game.to_dict()
        assert snapshot == full
        assert changes == (state_changes({"game": before}, {"game": full}) or {}).get(
            "game", {})
        assert list(changes) == [k for k in full if k in changes]  # the snapshot's order
        assert apply_event({"game": before}, {"changes": {"game": changes}}) == {"game": full}
        before = full
        if game.is_over:
            break
        side = game.to_act
        assert side is not None
        r = rnd.random()
        if game.phase is Phase.MOVE:
            if r < 0.03:
                game.resign(side, "gammon")
            else:
                game.play(side, rnd.choice(game.legal_plays))
        elif game.phase is Phase.ROLL:
            if game.can_double(side) and r < 0.2:
                game.double(side)
            elif r < 0.23:
                game.resign(side)
            else:
                game.roll(side)
        elif game.phase is Phase.DOUBLE_OFFERED:
            if r < 0.8:
                game.take(side)
            else:
                game.drop(side)
        elif game.phase is Phase.RESIGN_OFFERED:
            if r < 0.3:
                game.accept_resignation(side)
            else:
                game.reject_resignation(side)
        if rnd.random() < 0.01 and not game.is_over:
            game.forfeit(rnd.randint(0, 1), "timeout")


def test_a_game_answers_none_for_a_snapshot_it_did_not_build_last() -> None:
    game = Game(dice=RandomDice(random.Random(1)))
    first = game.to_dict()
    game.start()
    assert game.snapshot_changes(dict(first)) is None  # equal, but not its own
    second = game.to_dict()
    assert game.snapshot_changes(first) is None  # an older one
    same_again = game.snapshot_changes(second)
    assert same_again is not None and same_again[0] is second and same_again[1] == {}


def test_the_twins_play_the_same_moves() -> None:
    """The twin driver itself: both machines see one game (a sanity check of the harness)."""
    h = calm(5, 20)
    a, b = h.twin.built, h.twin.diffed
    assert a.version == b.version > 20
    assert a.state() == b.state()
    assert a.game is not None and b.game is not None
    assert a.game.history == b.game.history

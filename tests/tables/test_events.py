"""The event builder (``server.tables.events``) on a state model of its own, with no commands:
the full state, the versions, the two forms of each event, the lean ``changes`` built from
what changed, and a handout's keys sent whole in the next event (pure: no sockets)."""

from __future__ import annotations

import random

from server.protocol.lean import apply_event
from server.protocol.messages import TableMode
from server.rules import Game, Match, Side
from server.tables.events import EventBuilder, held_state, match_state
from server.tables.model import Hold, MachineSettings, Seat, TableState
from server.tables.ratings import RatingPlan
from tests.tables.test_machine_replay import RandomDice

NOW = 1_000_000.0
SETTINGS = MachineSettings(decision_time=10.0, max_strikes=3)


def dice() -> RandomDice:
    return RandomDice(random.Random(5))


def table(match_length: int = 0) -> TableState:
    t = TableState(table_id="t1", mode=TableMode.COMPETITIVE, match_length=match_length,
                   tournament_id=None, created_at=NOW, settings=SETTINGS)
    t.seats = [Seat("alice", "Alice", False, "a", nodes={"n1"}),
               Seat("bob", "Bob", True, "b", nodes={"n1"})]
    t.plan = RatingPlan("table42", False, None)
    return t


def started(match_length: int = 0) -> TableState:
    t = table(match_length)
    rolls = dice()
    if match_length:
        t.match = Match(match_length, dice=rolls)
        t.game = t.match.next_game()
    else:
        t.game = Game(dice=rolls)
    t.game.start()
    t.game_no = 1
    return t


def test_the_state_has_every_part_of_the_table() -> None:
    t = started(match_length=5)
    t.clock_side, t.deadline, t.strikes = Side(1), NOW + 10.0, [1, 0]
    state = EventBuilder().state(t)
    assert list(state) == ["status", "seats", "game_no", "game", "clock", "match", "rating",
                           "held"]
    assert state["seats"][1] == {"side": 1, "player": "bob", "name": "Bob", "guest": True,
                                 "bot": False, "connected": True, "grace_deadline": None}
    assert state["clock"] == {"side": 1, "deadline": NOW + 10.0, "limit": 10.0,
                              "strikes": [1, 0], "max_strikes": 3}
    assert state["match"] == match_state(t) == {"length": 5, "score": [0, 0],
                                                "crawford": False, "winner": None}
    assert t.plan is not None and state["rating"] == t.plan.to_dict()
    assert state["held"] is None
    t.held = Hold(NOW, clock_left=4.0)
    assert held_state(t) == {"since": NOW, "clock_left": 4.0}


def test_events_count_versions_and_a_stateless_event_has_one_form() -> None:
    t = table()
    builder = EventBuilder()
    builder.emit(t, "seated", {"side": 0, "player": "alice"}, with_state=False)
    builder.emit(t, "seated", {"side": 1, "player": "bob"}, with_state=False)
    out = builder.take()
    assert [o.obj["v"] for o in out] == [1, 2] and t.version == 2
    assert all(o.lean is None and "state" not in o.obj for o in out)
    assert builder.take() == [] and t.last_state is None


def test_a_game_start_is_whole_and_the_next_events_carry_what_changed() -> None:
    t = started()
    builder = EventBuilder()
    builder.emit(t, "game_start", {"game_no": 1})
    (start,) = builder.take()
    assert start.lean is None and t.game_starts == [1] and t.last_state is start.obj["state"]
    assert builder.built is t.last_state
    # Only the clock changed: the lean form says so and nothing else.
    t.clock_side, t.deadline = Side(0), NOW + 10.0
    builder.emit(t, "timeout", {"side": 0})
    (event,) = builder.take()
    assert event.lean is not None
    assert event.lean["changes"] == {"clock": {"side": 0, "deadline": NOW + 10.0}}
    assert apply_event(start.obj["state"], event.lean) == event.obj["state"]


def test_a_seat_change_is_seen_only_once_told() -> None:
    t = started()
    builder = EventBuilder()
    builder.emit(t, "game_start", {})
    builder.take()
    seat = t.seats[1]
    assert seat is not None
    seat.nodes.clear()
    seat.grace_deadline = NOW + 20.0
    builder.emit(t, "player_disconnected", {"side": 1})
    (unseen,) = builder.take()
    assert unseen.lean is not None and "seats" not in unseen.lean["changes"]
    builder.seats_changed()
    builder.emit(t, "player_disconnected", {"side": 1})
    (seen,) = builder.take()
    assert seen.lean is not None
    assert seen.lean["changes"]["seats"][1]["connected"] is False


def test_a_handout_sends_what_it_differs_in_whole_next_time() -> None:
    t = started()
    builder = EventBuilder()
    builder.emit(t, "game_start", {})
    builder.take()
    t.strikes = [1, 0]
    handed = builder.handout(t)
    assert handed["clock"]["strikes"] == [1, 0] and builder.forced == {"clock"}
    builder.emit(t, "timeout", {})
    (event,) = builder.take()
    assert event.lean is not None and event.lean["changes"]["clock"] == handed["clock"]
    assert builder.forced == set()


def test_built_changes_are_the_diffed_ones() -> None:
    direct, diffed = EventBuilder(), EventBuilder()
    diffed.direct = False
    for builder in (direct, diffed):
        t = started(match_length=3)  # the same game for both (the same dice)
        builder.emit(t, "game_start", {})
        builder.take()
        t.strikes = [0, 2]
        t.clock_side, t.deadline = Side(1), NOW + 7.0
        builder.emit(t, "timeout", {})
    (a,), (b,) = (direct.out, diffed.out)
    assert a.lean == b.lean and a.obj == b.obj


def test_a_logged_state_adopted_is_diffed_from() -> None:
    t = started()
    builder = EventBuilder()
    builder.emit(t, "game_start", {})
    builder.take()
    logged = dict(builder.state(t))
    logged["clock"] = dict(logged["clock"], deadline=NOW + 1.0)
    builder.adopt(t, logged)
    assert t.last_state is logged and builder.built is None
    assert builder.built_changes(t) is None
    builder.emit(t, "timeout", {})
    (event,) = builder.take()
    assert event.lean is not None and event.lean["changes"] == {"clock": {"deadline": None}}

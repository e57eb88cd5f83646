"""The table's rules, one transition per test, fed to the machine directly: opening a table,
who may sit, what leaving does, what a game's end settles. No sockets, no sleeps."""

from __future__ import annotations

import random

import pytest

from server.protocol.errors import ProtocolError
from server.protocol.messages import AcceptResign, Resign, ResignKind, TableMode
from server.rules import EndReason
from server.tables.machine import (
    BOOSTED,
    FIBS,
    TABLE42,
    FinishedGame,
    LeaveKind,
    MachineSettings,
    TableMachine,
    TableStatus,
    already_seated,
    check_new_table,
)

MAX = 25


class Dice:
    def __init__(self) -> None:
        self.rnd = random.Random(3)

    def roll_die(self) -> int:
        return self.rnd.randint(1, 6)


def table(mode: TableMode = TableMode.COMPETITIVE, length: int = 0,
          tournament: str | None = None) -> TableMachine:
    return TableMachine(table_id="t1", mode=mode, match_length=length, tournament_id=tournament,
                        created_at=0.0, settings=MachineSettings(), dice_factory=Dice)


def sit(m: TableMachine, side: int, player: str) -> None:
    m.seat(side, player, player, is_guest=False, address=f"10.0.0.{side}", nodes={"n1"},
           now=1.0)


def playing(mode: TableMode = TableMode.COMPETITIVE, length: int = 0) -> TableMachine:
    m = table(mode, length, "tn1" if mode is TableMode.TOURNAMENT else None)
    sit(m, 0, "ann")
    sit(m, 1, "bob")
    m.start(2.0)
    return m


def refused(code: str, field: str | None = None) -> pytest.RaisesExc[ProtocolError]:
    """Raises ProtocolError ``code`` (naming ``field`` when given)."""
    return pytest.raises(ProtocolError, check=lambda e: e.code == code and (
        field is None or e.field == field))


# --- opening a table: one check for every way ---------------------------------------------

def test_a_player_opens_any_mode_but_tournament_up_to_the_longest_match() -> None:
    for mode in (TableMode.COMPETITIVE, TableMode.BOOSTED, TableMode.PRIVATE):
        assert check_new_table(mode, 7, None, ["ann"], max_match_length=MAX,
                               by_player=True) == 7
    with refused("bad_field", "match_length"):
        check_new_table(TableMode.COMPETITIVE, MAX + 1, None, ["ann"], max_match_length=MAX,
                        by_player=True)


def test_a_player_cannot_open_a_tournament_table() -> None:
    with refused("bad_field", "mode"):
        check_new_table(TableMode.TOURNAMENT, 0, "tn1", ["ann"], max_match_length=MAX,
                        by_player=True)
    with refused("missing_field", "tournament_id"):
        check_new_table(TableMode.TOURNAMENT, 0, None, ["ann"], max_match_length=MAX,
                        by_player=True)
    with refused("bot_not_allowed", "mode"):
        check_new_table(TableMode.TOURNAMENT, 0, "tn1", ["bot-basic-1"], max_match_length=MAX,
                        by_player=True)


def test_a_pair_is_two_players_at_a_rated_boosted_or_tournament_table() -> None:
    assert check_new_table(TableMode.COMPETITIVE, None, None, ["ann", "bob"],
                           max_match_length=MAX, by_player=False) == 0
    assert check_new_table(TableMode.TOURNAMENT, 5, "tn1", ["ann", "bob"],
                           max_match_length=MAX, by_player=False) == 5
    with refused("same_player", "second"):
        check_new_table(TableMode.COMPETITIVE, None, None, ["ann", "ann"],
                        max_match_length=MAX, by_player=False)
    with refused("bad_field", "mode"):
        check_new_table(TableMode.PRIVATE, None, None, ["ann", "bob"], max_match_length=MAX,
                        by_player=False)


def test_a_pair_needs_a_tournament_id_exactly_at_a_tournament_table() -> None:
    with refused("bad_field", "tournament_id"):
        check_new_table(TableMode.TOURNAMENT, None, None, ["ann", "bob"],
                        max_match_length=MAX, by_player=False)
    with refused("bad_field", "tournament_id"):
        check_new_table(TableMode.COMPETITIVE, None, "tn1", ["ann", "bob"],
                        max_match_length=MAX, by_player=False)


def test_a_pair_plays_one_game_or_a_match_of_one_point_up() -> None:
    for length in (0, MAX + 1, -1):
        with refused("bad_field", "match_length"):
            check_new_table(TableMode.COMPETITIVE, length, None, ["ann", "bob"],
                            max_match_length=MAX, by_player=False)


def test_no_computer_player_at_a_tournament_table_of_a_pair() -> None:
    with refused("bot_not_allowed", "second"):
        check_new_table(TableMode.TOURNAMENT, None, "tn1", ["ann", "bot-basic-1"],
                        max_match_length=MAX, by_player=False)
    assert check_new_table(TableMode.COMPETITIVE, None, None, ["ann", "bot-basic-1"],
                           max_match_length=MAX, by_player=False) == 0


def test_already_seated_says_where() -> None:
    mine = already_seated("t9")
    assert (mine.code, mine.field, str(mine)) == (
        "already_seated", "table", "you already hold a seat at table t9")
    theirs = already_seated("t9", player="bob", field="second")
    assert (theirs.field, str(theirs)) == ("second", "bob already holds a seat at table t9")


# --- joining ------------------------------------------------------------------------------

def test_a_join_takes_the_free_seat_of_an_open_table() -> None:
    m = table()
    sit(m, 0, "ann")
    assert m.check_join("bob", is_bot=False) == 1


def test_a_seated_player_joining_again_resumes() -> None:
    m = table()
    sit(m, 0, "ann")
    assert m.check_join("ann", is_bot=False) is None


def test_a_playing_table_is_full() -> None:
    m = playing()
    with refused("table_full", "table"):
        m.check_join("carol", is_bot=False)
    assert m.check_join("ann", is_bot=False) is None  # its player resumes


def test_a_closed_table_is_not_open() -> None:
    m = table()
    sit(m, 0, "ann")
    m.close("left", 2.0)
    with refused("table_full"):
        m.check_join("bob", is_bot=False)


def test_a_join_waits_for_the_one_being_seated() -> None:
    m = table()
    sit(m, 0, "ann")
    m.joining = "bob"
    with refused("table_full"):
        m.check_join("carol", is_bot=False)
    sit(m, 1, "bob")  # the one being seated sits
    assert m.is_full


def test_no_computer_player_joins_a_tournament_table() -> None:
    m = table(TableMode.TOURNAMENT, 0, "tn1")
    with refused("bot_not_allowed", "table"):
        m.check_join("bot-basic-1", is_bot=True)


# --- seat: checked again after the shell's awaits -------------------------------------------

def test_a_taken_seat_is_not_overwritten() -> None:
    m = table()
    sit(m, 0, "ann")
    with refused("table_full"):
        sit(m, 0, "bob")
    assert m.seats[0] is not None and m.seats[0].player == "ann" and m.version == 1


def test_a_player_sits_once() -> None:
    m = table()
    sit(m, 0, "ann")
    with refused("already_seated"):
        sit(m, 1, "ann")


def test_nobody_sits_at_a_table_that_closed_meanwhile() -> None:
    m = table()
    sit(m, 0, "ann")
    m.close("abandoned", 2.0)
    with refused("table_full"):
        sit(m, 1, "bob")


def test_nobody_else_sits_while_a_player_is_being_seated() -> None:
    m = table()
    m.joining = "bob"
    with refused("table_full"):
        sit(m, 0, "carol")


def test_no_computer_player_sits_at_a_tournament_table() -> None:
    m = table(TableMode.TOURNAMENT, 0, "tn1")
    with refused("bot_not_allowed"):
        sit(m, 0, "bot-basic-1")


def test_no_seat_beyond_the_two() -> None:
    m = table()
    with refused("table_full"):
        sit(m, 2, "ann")


# --- leaving ------------------------------------------------------------------------------

def test_leaving_an_open_table_closes_it() -> None:
    m = table()
    sit(m, 0, "ann")
    kind, step = m.leave("ann", 2.0)
    assert kind is LeaveKind.CLOSE and m.status is TableStatus.CLOSED
    assert [(o.obj["type"], o.obj["reason"]) for o in step.events] == [("table_closed", "left")]


def test_leaving_a_game_in_play_forfeits_it() -> None:
    m = playing()
    kind, step = m.leave("bob", 3.0)
    assert kind is LeaveKind.FORFEIT and step.settle is not None
    assert (step.settle.winner, step.settle.outcome.reason) == ("ann", EndReason.LEAVE)


def test_leaving_a_match_forfeits_the_match() -> None:
    m = playing(length=5)
    kind, step = m.leave("ann", 3.0)
    assert kind is LeaveKind.FORFEIT and step.settle is not None and step.settle.match_over
    assert [o.obj["type"] for o in step.events][-2:] == ["game_over", "match_over"]


def test_leaving_a_match_between_its_games_forfeits_the_match() -> None:
    m = playing(length=5)
    m.act("bob", Resign(table="t1", kind=ResignKind.SINGLE), 3.0)
    step = m.act("ann", AcceptResign(table="t1"), 3.0)
    assert step.settle is not None and not step.settle.match_over
    m.settled(3.0)
    assert m.status is TableStatus.PLAYING and m.next_game is not None
    kind, step = m.leave("bob", 4.0)
    assert kind is LeaveKind.FORFEIT and step.settle is not None
    assert step.settle.match_over and not step.settle.game_counted
    assert m.next_game is None


def test_leaving_while_the_game_is_settled_only_frees_the_seat() -> None:
    m = playing()
    m.leave("bob", 3.0)
    kind, step = m.leave("ann", 3.5)
    assert kind is LeaveKind.RELEASE and not step.events


def test_leaving_a_finished_table_only_frees_the_seat() -> None:
    m = playing()
    m.leave("bob", 3.0)
    m.settled(4.0)
    assert m.status is TableStatus.FINISHED
    assert m.leave("ann", 5.0)[0] is LeaveKind.RELEASE


def test_only_a_seated_player_leaves() -> None:
    m = playing()
    with refused("not_seated", "table"):
        m.leave("carol", 3.0)


# --- what a game's end settles ------------------------------------------------------------

def ended(mode: TableMode, length: int = 0, *, guest: bool = False) -> FinishedGame:
    m = table(mode, length, "tn1" if mode is TableMode.TOURNAMENT else None)
    sit(m, 0, "ann")
    m.seat(1, "guest-x" if guest else "bob", "b", is_guest=guest, address="10.0.0.9",
           nodes={"n1"}, now=1.0)
    m.start(2.0)
    step = m.leave("ann", 3.0)[1]
    assert step.settle is not None
    return step.settle


def test_a_rated_single_game_settles_table42_under_its_game_id() -> None:
    s = ended(TableMode.COMPETITIVE)
    assert (s.settles, s.rated_id) == (TABLE42, s.game_id)


def test_a_rated_match_settles_fibs_under_its_match_id_once_over() -> None:
    s = ended(TableMode.COMPETITIVE, 3)
    assert (s.settles, s.rated_id) == (FIBS, s.match_id)


def test_a_boosted_game_earns_points_and_rates_nothing() -> None:
    s = ended(TableMode.BOOSTED)
    assert (s.settles, s.rated_id) == (BOOSTED, None)


def test_unrated_games_settle_nothing() -> None:
    for s in (ended(TableMode.PRIVATE), ended(TableMode.TOURNAMENT),
              ended(TableMode.COMPETITIVE, guest=True)):
        assert (s.settles, s.rated_id) == (None, None)

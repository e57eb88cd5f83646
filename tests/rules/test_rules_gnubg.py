"""GNU Backgammon Position IDs and Match IDs, and legal_position_ids for bots."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_rules_reference import positions

from server.rules import (
    Game,
    InvalidIdError,
    MatchState,
    Position,
    ResultKind,
    ScriptedDice,
    Side,
    decode_match_id,
    decode_position_id,
    legal_plays,
    legal_position_ids,
    match_id,
    position_id,
)
from server.rules.gnubg import encode_match_state, position_from_id

START_ID = "4HPwATDgc/ABMA"  # GNU Backgammon manual §11.6 and every gnubg session


def test_starting_position() -> None:
    assert position_id(Position.initial(Side.ZERO)) == START_ID
    assert position_id(Position.initial(Side.ONE)) == START_ID
    assert Position.initial().position_id() == START_ID
    assert Position.from_position_id(START_ID, Side.ONE) == Position.initial(Side.ONE)


# IDs from wildbg's tests (crates/engine/src/position/conversion.rs), an engine that trades
# positions with GNU Backgammon; the notes are its own ("X" is the player on roll).
KNOWN = [
    ("jGfkASjg8wcBMA", "random position", (0, 0), (0, 0)),
    ("zGbiIQgxH/AAWA", "X (on roll) on the bar", (1, 0), (0, 0)),
    ("zGbiIYCYD3gALA", "O (not on roll) has borne off", (1, 0), (0, 1)),
]


@pytest.mark.parametrize(("pid", "note", "bars", "offs"), KNOWN)
def test_known_ids(pid: str, note: str, bars: tuple[int, int], offs: tuple[int, int]) -> None:
    on_roll, other = decode_position_id(pid)
    assert (on_roll[25], other[25]) == bars, note
    assert (on_roll[0], other[0]) == offs, note
    for turn in Side:
        position = Position.from_position_id(pid, turn)
        assert position.turn == turn
        assert position.bar[turn] == bars[0] and position.off[turn.opponent] == offs[1]
        assert position_id(position) == pid


def test_the_side_on_roll_is_encoded_second() -> None:
    # One checker of the side on roll on the bar: its 25 is the very last group of ones.
    position = Position.from_points({25: 1, 6: 14}, {6: 15}, turn=Side.ZERO)
    key = int.from_bytes(__import__("base64").b64decode(position_id(position) + "=="), "little")
    bits = f"{key:080b}"[::-1]  # bit 0 first
    not_on_roll = "0" * 5 + "1" * 15 + "0" * 19 + "0"  # six point: 15, then 18 empty + bar
    assert bits.startswith(not_on_roll)
    on_roll = "0" * 5 + "1" * 14 + "0" * 19 + "10"
    assert bits[len(not_on_roll) :].startswith(on_roll)


@settings(max_examples=300, deadline=None)
@given(positions())
def test_position_id_round_trip(position: Position) -> None:
    pid = position_id(position)
    assert len(pid) == 14
    assert Position.from_position_id(pid, position.turn) == position
    # The other side on roll is another ID of the same checkers.
    other = position.with_turn(position.turn.opponent)
    assert Position.from_position_id(position_id(other), other.turn) == other


@pytest.mark.parametrize(
    "pid",
    [
        "",
        "4HPwATDgc/ABM",
        "4HPwATDgc/ABMAA",
        "4HPwATDgc/AB!A",
        "//////////////",  # far more than 15 checkers
        "AQAAAAAAAAAAAA",  # fine: one checker, the rest off
    ],
)
def test_bad_position_ids(pid: str) -> None:
    if pid == "AQAAAAAAAAAAAA":
        assert Position.from_position_id(pid).off == (15, 14)
        return
    with pytest.raises(InvalidIdError) as info:
        Position.from_position_id(pid)
    assert info.value.code == "invalid_position_id"


def test_both_sides_on_one_point_is_refused() -> None:
    # Not on roll: one checker on its ace point (= the roller's 24 point); on roll: one
    # checker on its 24 point: bit 0 set, then 25 zeros, then 23 zeros and a one.
    key = 1 | 1 << (1 + 25 + 23)
    pid = __import__("base64").b64encode(key.to_bytes(10, "little")).decode()[:14]
    with pytest.raises(InvalidIdError, match="both sides"):
        position_from_id(pid)


def test_legal_position_ids_from_the_start() -> None:
    six_five = legal_position_ids(START_ID, (6, 5))
    assert len(six_five) == 7  # the rules issue, from GNU Backgammon
    assert len(legal_position_ids(START_ID, (1, 1))) == 42  # likewise
    assert len(legal_position_ids(START_ID, (5, 6))) == 7
    start = Position.initial()
    expected = {position_id(start.apply(p, pass_turn=False)) for p in legal_plays(start, (6, 5))}
    assert six_five == expected
    # The mover stays on roll: 24/13 leaves one checker on its 24 point, one more on 13.
    after = {Position.from_position_id(pid) for pid in six_five}
    assert any(p.checkers(Side.ZERO)[24] == 1 and p.checkers(Side.ZERO)[13] == 6 for p in after)


def test_legal_position_ids_when_nothing_can_move() -> None:
    closed = Position.from_points({25: 1, 6: 14}, {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 13: 3})
    pid = position_id(closed)
    assert legal_position_ids(pid, (6, 6)) == {pid}


def test_legal_position_ids_checks_its_input() -> None:
    with pytest.raises(InvalidIdError):
        legal_position_ids("nonsense", (6, 5))
    with pytest.raises(ValueError, match="roll"):
        legal_position_ids(START_ID, (0, 5))


# -- Match IDs ----------------------------------------------------------------------------------

MATCH_IDS = [
    # GNU Backgammon manual §1: the sample session after "gnubg rolls 3, anthon rolls 1",
    # gnubg (player 0) to play 31 in a money game. Written before bit 66 existed, so it
    # reads as "Jacoby on", as current GNU Backgammon reads it.
    ("MIEFAAAAAAAA", MatchState(1, None, Side.ZERO, False, "playing", Side.ZERO, False, None,
                                (3, 1), 0, (0, 0), jacoby=True)),
    # A money game with player 1 on roll and the cube centred (a gnubg-web default).
    ("cAkAAAAAAAAA", MatchState(1, None, Side.ONE, False, "playing", Side.ONE, False, None,
                                None, 0, (0, 0), jacoby=True)),
    # backgammoncalculator's README: GNUID of the XGID "...:0:0:1:53:1:2:1:3:10", a 3-point
    # match at 2-1 (player 0 first), Crawford, player 1 to play 5-3, Jacoby off.
    ("8IluACAACAAE", MatchState(1, None, Side.ONE, True, "playing", Side.ONE, False, None,
                                (5, 3), 3, (2, 1))),
]


@pytest.mark.parametrize(("mid", "state"), MATCH_IDS)
def test_known_match_ids(mid: str, state: MatchState) -> None:
    assert decode_match_id(mid) == state
    assert encode_match_state(state) == mid


def test_match_id_of_a_fresh_game_after_the_opening_roll() -> None:
    game = Game(dice=ScriptedDice([3, 1, 2, 5]))
    game.start()
    # The manual's sample session, same state, with bit 66 set: no Jacoby rule here.
    assert match_id(game) == "MIEFAAAAAAAE"
    game.play(Side.ZERO, "8/5 6/5")
    game.roll(Side.ONE)
    assert game.dice == (2, 5)
    assert decode_match_id(match_id(game)).dice == (5, 2)  # larger die first


def test_match_id_caps_a_finished_score_at_the_length() -> None:
    game = Game(dice=ScriptedDice([6, 1]), match_length=3, score=(2, 0))
    game.start()
    game.resign(Side.ONE, ResultKind.BACKGAMMON)
    game.accept_resignation(Side.ZERO)
    assert decode_match_id(match_id(game)).score == (3, 0)


match_states = st.builds(
    MatchState,
    cube=st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
    cube_owner=st.sampled_from([None, Side.ZERO, Side.ONE]),
    on_roll=st.sampled_from(list(Side)),
    crawford=st.booleans(),
    game_state=st.sampled_from(["none", "playing", "over", "resigned", "dropped"]),
    to_act=st.sampled_from(list(Side)),
    double_offered=st.booleans(),
    resignation=st.sampled_from([None, *ResultKind]),
    dice=st.one_of(
        st.none(), st.tuples(st.integers(1, 6), st.integers(1, 6)).map(lambda d: (max(d), min(d)))
    ),
    match_length=st.integers(0, 99),
    score=st.tuples(st.integers(0, 200), st.integers(0, 200)),
    jacoby=st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(match_states)
def test_match_id_round_trip(state: MatchState) -> None:
    mid = encode_match_state(state)
    assert len(mid) == 12
    assert decode_match_id(mid) == state


@pytest.mark.parametrize(
    "mid", ["", "cAkAAAAAAAA", "cAkAAAAAAAA!", "cAkAAAAAAAAAA", "//////////8A"]
)
def test_bad_match_ids(mid: str) -> None:
    with pytest.raises(InvalidIdError) as info:
        decode_match_id(mid)
    assert info.value.code == "invalid_match_id"

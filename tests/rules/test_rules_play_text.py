"""Whole-play text and step lists: reading, writing, and why a play is refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from test_rules_reference import positions, rolls

from server.rules import (
    IllegalPlayError,
    Position,
    Side,
    Step,
    format_play,
    format_plays,
    legal_plays,
    parse_play,
)
from server.rules.moves import MAX_PLAY_TEXT, play_texts

START = Position.initial()

SYNTAX = [
    ("24/13", [(24, 13)]),
    ("bar/20", [(25, 20)]),
    ("BAR/20", [(25, 20)]),
    ("25/20", [(25, 20)]),
    ("6/off", [(6, 0)]),
    ("6/0", [(6, 0)]),
    ("8/4(2)", [(8, 4), (8, 4)]),
    ("24/18*/13", [(24, 18), (18, 13)]),
    ("13/8, 13/7", [(13, 8), (13, 7)]),
    ("  24/18   13/8 ", [(24, 18), (13, 8)]),
    ("6/2*/off", [(6, 2), (2, 0)]),
    ("24/20(2) 13/9(2)", [(24, 20), (24, 20), (13, 9), (13, 9)]),
    ("", []),
    ("-", []),
]


@pytest.mark.parametrize(("text", "steps"), SYNTAX)
def test_syntax(text: str, steps: list[tuple[int, int]]) -> None:
    assert parse_play(text) == tuple(Step(a, b) for a, b in steps)


BAD_SYNTAX = [
    "24-13",
    "24/xx",
    "13/24",
    "26/20",
    "8/4(5)",
    "8/4(3) 6/1(2)",
    "24/",
    "/13",
    "x" * (MAX_PLAY_TEXT + 1),
]


@pytest.mark.parametrize("text", BAD_SYNTAX)
def test_bad_syntax_is_an_illegal_play(text: str) -> None:
    with pytest.raises(IllegalPlayError) as info:
        parse_play(text)
    assert info.value.code == "illegal_play"
    assert isinstance(info.value, ValueError)
    assert info.value.reason in {"syntax", "too_long"}


@pytest.mark.parametrize(
    "steps",
    [
        [[1]],
        [["24", 18]],
        [[True, 0]],
        [[26, 20]],
        [[13, 18]],
        [[24, 18]] * 5,
        ["not", "steps"],
        [(-1, 0)],
    ],
)
def test_bad_step_lists(steps: object) -> None:
    with pytest.raises(IllegalPlayError):
        parse_play(steps)  # type: ignore[arg-type]


def test_step_lists_and_text_resolve_to_the_same_play() -> None:
    by_text = parse_play("24/13", START, (6, 5))
    assert by_text == (Step(24, 18), Step(18, 13))
    assert parse_play([[24, 18], [18, 13]], START, (6, 5)) == by_text
    assert parse_play("13/8 24/18", START, (5, 6)) == parse_play("24/18 13/8", START, (6, 5))


def test_multi_die_step_prefers_the_route_without_a_hit() -> None:
    # Side 1 has a blot on my 18; 24/13 with 6-5 can pass 18 (hit) or 19 (no hit).
    position = Position.from_points({24: 2, 13: 13}, {7: 1, 2: 14})
    quiet = parse_play("24/13", position, (6, 5))
    assert quiet == (Step(24, 19), Step(19, 13))
    hitting = parse_play("24/18*/13", position, (6, 5))
    assert hitting == (Step(24, 18), Step(18, 13))
    assert format_play(hitting, position) == "24/18*/13"
    assert format_play(quiet, position) == "24/13"


REFUSED = [
    # (position, roll, text, reason, words in the message)
    (START, (6, 5), "23/17 13/8", "no_checker", "no checker on point 23"),
    (START, (6, 5), "24/19 13/7", "blocked", "point 19 is held"),
    (START, (6, 5), "24/20 13/8", "dice", "does not fit"),
    (START, (6, 5), "24/18", "must_use_more_dice", "both dice"),
    (START, (6, 5), "", "must_use_more_dice", "empty play"),
    (START, (6, 5), "6/off 6/1", "not_all_home", "all 15"),
    (START, (1, 1), "24/23", "must_use_more_dice", "4 of the four dice"),
    (
        Position.from_points({25: 1, 13: 14}, {1: 15}),
        (6, 5),
        "13/7 13/8",
        "must_enter",
        "on the bar",
    ),
    (
        Position.from_points({3: 2, 2: 1}, {1: 15}),
        (6, 1),
        "2/off 3/2",
        "higher_checker",
        "higher point",
    ),
    (
        Position.from_points({12: 1}, {24: 2, 6: 13}),
        (6, 5),
        "12/7",
        "must_use_larger_die",
        "larger die (6)",
    ),
    (
        Position.from_points({25: 1, 6: 14}, {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 13: 3}),
        (6, 5),
        "bar/20",
        "must_enter",
        "pass",
    ),
]


@pytest.mark.parametrize(("position", "roll", "text", "reason", "words"), REFUSED)
def test_refused_plays_say_why(
    position: Position, roll: tuple[int, int], text: str, reason: str, words: str
) -> None:
    with pytest.raises(IllegalPlayError) as info:
        parse_play(text, position, roll)
    assert info.value.reason == reason
    assert words in str(info.value)


def test_parse_needs_both_position_and_roll() -> None:
    with pytest.raises(ValueError, match="both"):
        parse_play("24/18", START)
    with pytest.raises(ValueError, match="roll"):
        parse_play("24/18", START, (7, 1))


def test_format_groups_and_orders() -> None:
    play = (Step(6, 5), Step(8, 5), Step(6, 5), Step(8, 5))
    assert format_play(play) == "8/5(2) 6/5(2)"
    assert format_play(()) == ""
    assert format_play((Step(25, 22), Step(22, 16))) == "bar/16"
    assert format_play((Step(3, 0), Step(3, 0))) == "3/off(2)"


@settings(max_examples=400, deadline=None)
@given(positions(), rolls)
def test_every_legal_play_survives_text_and_step_lists(
    position: Position, roll: tuple[int, int]
) -> None:
    plays = list(legal_plays(position, roll))
    texts = format_plays(plays, position)  # the batch formatter writes the same text
    assert texts == [format_play(play, position) for play in plays]
    _, by_text = play_texts(position, *roll)
    for play, text in zip(plays, texts, strict=True):
        assert by_text.get(text, play) == play
    for play in plays:
        text = format_play(play, position)
        assert parse_play(text, position, roll) == play
        assert parse_play([list(step) for step in play], position, roll) == play
        assert parse_play(list(reversed(play)), position, roll) == play  # any order


def test_side_one_uses_its_own_numbering() -> None:
    position = START.with_turn(Side.ONE)
    play = parse_play("24/18 13/8", position, (6, 5))
    after = position.apply(play)
    assert after.checkers(Side.ONE)[18] == 1
    assert after.checkers(Side.ONE)[8] == 4
    assert after.turn == Side.ZERO

"""Perft: the generator pinned to known counts of distinct legal plays.

Every count says where it comes from: a hand derivation written beside it, the GNU
Backgammon figures quoted in the rules issue (6-5 → 7 and 1-1 → 42 from the start), or the
brute-force reference generator in ``rules_reference.py`` (which tries every order of
every die and is checked against the fast generator in ``test_rules_reference.py``).
"""

from __future__ import annotations

import pytest
from rules_reference import reference_results

from server.rules import Position, Side, format_play, legal_plays

START = Position.initial()

# Opening rolls from the standard start. The side to move holds 24:2 13:5 8:3 6:5; the
# opponent's checkers block its points 1, 12, 17 and 19.
OPENING_COUNTS = {
    # Hand: sixes go 24/18, 13/7, 8/2 only (18/12 and 7/1 are blocked, no bear-off): x+y+z
    # = 4 with x <= 2 (from 24) and z <= 3 (from 8) has 4 + 4 + 3 = 11 solutions.
    (6, 6): 11,
    # GNU Backgammon (quoted in the rules issue); by hand: 24/13, 24/18 13/8, 24/18 8/3,
    # 13/7 13/8, 13/7 8/3, 13/2 (= 13/8 8/2), 8/2 8/3.
    (6, 5): 7,
    (6, 4): 14,  # reference generator
    (6, 3): 14,  # reference generator
    (6, 2): 14,  # reference generator
    (6, 1): 10,  # reference generator
    # Hand: fives go only 13/8 and 8/3 (24/19 and 6/1 are blocked); a + b = 4 steps with
    # b <= 3 + a gives (4,0) (3,1) (2,2) (1,3): 4.
    (5, 5): 4,
    (5, 4): 9,  # reference generator
    (5, 3): 9,  # reference generator
    (5, 2): 8,  # reference generator
    (5, 1): 8,  # reference generator
    (4, 4): 52,  # reference generator
    (4, 3): 17,  # reference generator
    (4, 2): 18,  # reference generator
    (4, 1): 14,  # reference generator
    (3, 3): 73,  # reference generator
    (3, 2): 17,  # reference generator
    (3, 1): 16,  # reference generator
    (2, 2): 75,  # reference generator
    # Hand: twos 24/22 13/11 8/6 6/4 times ones 24/23 8/7 6/5 is 12 pairs, less 8/6 6/5
    # (= 8/5) is 11; plus one checker moving 3: 24/21, 13/10, 8/5, 6/3: 15.
    (2, 1): 15,
    (1, 1): 42,  # GNU Backgammon (quoted in the rules issue)
}


def count(position: Position, roll: tuple[int, int]) -> int:
    return len(list(legal_plays(position, roll)))


def reference_count(position: Position, roll: tuple[int, int]) -> int:
    mine, theirs = position.mover_view()
    return len(reference_results((tuple(mine), tuple(theirs)), roll))


@pytest.mark.parametrize(("roll", "expected"), sorted(OPENING_COUNTS.items()))
def test_opening_roll_counts(roll: tuple[int, int], expected: int) -> None:
    assert count(START, roll) == expected
    assert count(START, (roll[1], roll[0])) == expected
    assert count(START.with_turn(Side.ONE), roll) == expected
    assert reference_count(START, roll) == expected


def test_all_21_opening_rolls_are_pinned() -> None:
    assert len(OPENING_COUNTS) == 21


def test_six_five_plays_by_name() -> None:
    plays = sorted(format_play(p, START) for p in legal_plays(START, (6, 5)))
    assert plays == sorted(
        ["24/13", "24/18 13/8", "24/18 8/3", "13/8 13/7", "13/7 8/3", "13/2", "8/3 8/2"]
    )


# Bar entry. The opponent holds its home points with two checkers each; the side to move
# enters on its point 25 - die.
CLOSED = Position.from_points(
    {25: 1, 6: 14},
    {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 13: 3},
)
HALF_CLOSED_ONE_ON_BAR = Position.from_points(
    {25: 1, 6: 14},
    {4: 2, 5: 2, 6: 2, 13: 9},  # blocks my 21, 20, 19: dice 4, 5, 6 cannot enter
)
HALF_CLOSED_TWO_ON_BAR = Position.from_points(
    {25: 2, 6: 13},
    {4: 2, 5: 2, 6: 2, 13: 9},
)

# Bear-off: all home, nothing of the opponent's in the way.
BEAR_OFF = Position.from_points({3: 2, 2: 1}, {1: 15})

# One checker left outside with 14 off; the opponent holds my point 1 (its 24 point).
FORCED_LARGER = Position.from_points({12: 1}, {24: 2, 6: 13})

# Doubles that can be played only partly: the opponent holds my 16 (its 9 point).
PARTIAL_DOUBLES = Position.from_points({24: 2}, {9: 2, 6: 13})


PERFT = [
    # Hand: every entry point 24..19 is held; the only play is the empty one (pass).
    ("closed board", CLOSED, (6, 5), 1),
    ("closed board", CLOSED, (1, 1), 1),
    # Hand: 6 and 5 both blocked: pass.
    ("half-closed, 6-5", HALF_CLOSED_ONE_ON_BAR, (6, 5), 1),
    # Hand: bar/22 then a 1: 22/21 is blocked, so 6/5; or bar/24 then a 3: 24/21 blocked,
    # so 6/3. Two plays.
    ("half-closed, 3-1", HALF_CLOSED_ONE_ON_BAR, (3, 1), 2),
    # Hand: only the 3 enters (bar/22); the second checker on the bar cannot enter with
    # the 6, so nothing else may move: one play using one die.
    ("half-closed, two on bar, 6-3", HALF_CLOSED_TWO_ON_BAR, (6, 3), 1),
    # Hand: both enter, bar/22 bar/23 (3-2): one play.
    ("half-closed, two on bar, 3-2", HALF_CLOSED_TWO_ON_BAR, (3, 2), 1),
    # Hand: 3:2 2:1 with 6-5: each die bears off from the highest point: 3/off 3/off.
    ("bear-off, larger dice", BEAR_OFF, (6, 5), 1),
    # Hand: the 6 can only bear off from 3; the 1 plays 3/2 or 2/1: {3/off 3/2,
    # 3/off 2/1}; playing the 1 first reaches the same two.
    ("bear-off, 6-1", BEAR_OFF, (6, 1), 2),
    # Hand: 4-4 bears off 3/off 3/off 2/off with three fours (all 15 off, game over).
    ("bear-off, 4-4", BEAR_OFF, (4, 4), 1),
    # Hand: 12/6 or 12/7 alone, but 6/1 and 7/1 are blocked and 6/1 is not a bear-off:
    # only one die plays, so the larger: 12/6.
    ("forced larger die", FORCED_LARGER, (6, 5), 1),
    # Hand: 24/20 for each checker, then 20/16 is blocked: 24/20(2) uses two of four.
    ("partial doubles", PARTIAL_DOUBLES, (4, 4), 1),
]


@pytest.mark.parametrize(
    ("name", "position", "roll", "expected"), PERFT, ids=[f"{p[0]} {p[2]}" for p in PERFT]
)
def test_perft(name: str, position: Position, roll: tuple[int, int], expected: int) -> None:
    assert count(position, roll) == expected
    assert reference_count(position, roll) == expected


def test_pass_is_the_empty_play() -> None:
    assert list(legal_plays(CLOSED, (6, 5))) == [()]


def test_forced_larger_die_is_the_six() -> None:
    [play] = legal_plays(FORCED_LARGER, (5, 6))
    assert format_play(play) == "12/6"


def test_partial_doubles_use_two_dice() -> None:
    [play] = legal_plays(PARTIAL_DOUBLES, (4, 4))
    assert format_play(play) == "24/20(2)"


def test_two_on_bar_enters_one_with_the_open_die() -> None:
    [play] = legal_plays(HALF_CLOSED_TWO_ON_BAR, (6, 3))
    assert format_play(play) == "bar/22"


def test_bear_off_six_one() -> None:
    plays = sorted(format_play(p) for p in legal_plays(BEAR_OFF, (6, 1)))
    assert plays == ["3/2 3/off", "3/off 2/1"]

"""The fast generator against the slow reference over thousands of positions and rolls."""

from __future__ import annotations

from itertools import islice

import build_outputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rules_reference import Board, reference_results, single_steps

from server.rules import Position, Side, legal_plays, legal_results


@st.composite
def positions(draw: st.DrawFn) -> Position:
    """Any legal position: checkers anywhere, some on the bar, some off; often all home."""
    board = [0] * 24
    bars = [0, 0]
    for side in (0, 1):
        bars[side] = draw(st.sampled_from([0, 0, 0, 0, 1, 1, 2, 3]))
        zone = draw(st.sampled_from([24, 24, 12, 6]))  # 6: everything home (bear-off)
        # Stacks of 2 make points, so blocked dice (and forced or partial plays) are common.
        stack = draw(st.sampled_from([1, 1, 2]))
        # Few checkers left against many points: forced and one-die plays.
        free = min(15 - bars[side], draw(st.sampled_from([15, 15, 15, 4, 2])))
        points = draw(st.lists(st.integers(1, zone), min_size=0, max_size=free // stack))
        for point in points:
            index = point - 1 if side == 0 else 24 - point
            if (board[index] < 0) if side == 0 else (board[index] > 0):
                continue  # the other side is there; these checkers stay off
            board[index] += stack if side == 0 else -stack
    zero = 15 - sum(n for n in board if n > 0) - bars[0]
    one = 15 + sum(n for n in board if n < 0) - bars[1]
    turn = draw(st.sampled_from([Side.ZERO, Side.ONE]))
    return Position(tuple(board), (bars[0], bars[1]), (zero, one), turn)


rolls = st.tuples(st.integers(1, 6), st.integers(1, 6))


def board_of(position: Position) -> Board:
    mine, theirs = position.mover_view()
    return (tuple(mine), tuple(theirs))


def check_against_reference(position: Position, roll: tuple[int, int]) -> None:
    expected = reference_results(board_of(position), roll)
    results = legal_results(position, roll)
    plays = list(legal_plays(position, roll))
    assert {board_of(after) for after in results} == expected
    assert len(plays) == len(expected)  # distinct by resulting position
    dice = [roll[0]] * 4 if roll[0] == roll[1] else list(roll)
    for play in plays:
        # The steps can be played in the order given, one die each, by the book.
        board = board_of(position)
        left = list(dice)
        for src, dst in play:
            options = {
                (s, d, die): after
                for die in set(left)
                for s, d, after in single_steps(board, die)
            }
            match = [key for key in options if key[0] == src and key[1] == dst]
            assert match, f"step {src}/{dst} of {play} is not legal here"
            left.remove(match[0][2])
            board = options[match[0]]
        assert board == board_of(position.apply(play, pass_turn=False))
        assert board in expected


def test_random_positions_match_reference() -> None:
    """3,000 positions of :func:`positions`'s shapes, seeded (``build_outputs``' corpus, which
    both builds answer alike), each with a roll."""
    for position, roll in islice(build_outputs.corpus(), build_outputs.RANDOM_POSITIONS):
        check_against_reference(position, roll)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(positions(), rolls)
def test_fast_generator_matches_reference(position: Position, roll: tuple[int, int]) -> None:
    """Positions drawn afresh on every run (and shrunk to a small one when one differs)."""
    check_against_reference(position, roll)


def test_positions_from_random_games_match_reference() -> None:
    """Realistic positions: every position and roll met in seeded random games (the rest of
    ``build_outputs``' corpus)."""
    games = islice(build_outputs.corpus(), build_outputs.RANDOM_POSITIONS, None)
    checked = 0
    for position, roll in games:
        check_against_reference(position, roll)
        checked += 1
    assert checked == build_outputs.GAME_POSITIONS

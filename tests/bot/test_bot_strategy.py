"""The computer players' pure core: shots, the hand-written evaluation, and every choice
one of the offered plays (whole games with the rules engine, no sockets)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from server.bot.evaluation import (
    after_play,
    evaluate,
    is_contact,
    pip_count,
    shots,
    sides_from_board,
    win_probability,
)
from server.bot.player import choose
from server.bot.strategy import Level, decide
from server.rules import Game, Position, ScriptedDice, legal_outcomes, legal_results

# The standard table of shots (rolls out of 36 that hit a blot d pips away, no blocks).
SHOTS = [
    (1, 11), (2, 12), (3, 14), (4, 15), (5, 15), (6, 17), (7, 6), (8, 6), (9, 5), (10, 3),
    (11, 2), (12, 3), (15, 1), (16, 1), (18, 1), (20, 1), (24, 1), (13, 0), (14, 0),
]


@pytest.mark.parametrize(("distance", "rolls"), SHOTS)
def test_shots_at_each_distance(distance: int, rolls: int) -> None:
    assert shots(1 << distance) == rolls


def test_shots_from_two_checkers_count_each_roll_once() -> None:
    assert shots((1 << 1) | (1 << 2)) == 20  # 11 + 12 - (1-1, 1-2, 2-1 counted twice)


def start() -> tuple[list[int], list[int]]:
    board = Position.initial().board
    return sides_from_board(board, (0, 0), (0, 0), 0)


def test_the_starting_position_is_even_and_in_contact() -> None:
    mine, theirs = start()
    assert pip_count(mine) == pip_count(theirs) == 167
    assert is_contact(mine, theirs)
    assert evaluate(mine, theirs) == 0.0
    assert win_probability(mine, theirs, on_roll=True) > 0.5 > win_probability(
        mine, theirs, on_roll=False)


def test_evaluate_weighs_the_blots_of_the_side_that_just_moved_more() -> None:
    mine, theirs = start()
    a, b = after_play(mine, theirs, [(24, 18), (13, 11)])  # two blots of mine
    assert evaluate(a, b) < 0  # I just moved: my blots face the opponent's roll
    assert -evaluate(b, a) > evaluate(a, b)  # with me on roll they cost less
    lead, _ = after_play(mine, theirs, [(13, 7), (13, 8)])
    assert pip_count(lead) == 156


def test_after_play_sends_a_hit_blot_to_the_bar() -> None:
    mine = [0] * 26
    theirs = [0] * 26
    mine[10] = 15
    theirs[20] = 1  # the opponent's 20 point is my 5 point
    theirs[1] = 14
    a, b = after_play(mine, theirs, [(10, 5)])
    assert a[5] == 1 and b[20] == 0 and b[25] == 1


def test_the_evaluator_makes_the_three_one_point_with_an_opening_three_one() -> None:
    game = Game(dice=ScriptedDice([3, 1]), cube_enabled=False)
    game.start()
    snapshot: dict[str, Any] = game.to_dict()
    side = int(snapshot["to_act"])
    for level in (Level.INTERMEDIATE, Level.ADVANCED):
        decision = decide(level, snapshot, side, random.Random(1))
        assert decision is not None and decision.play is not None
        assert sorted(decision.play) == [(6, 5), (8, 5)]
    position = Position.initial()
    assert len(legal_outcomes(position, (3, 1))) == len(legal_results(position, (3, 1)))


@dataclass
class BotGame:
    """One game two bots played with the rules engine: its outcome and their cube actions."""

    outcome: dict[str, Any]
    doubles: int = 0
    answers: dict[str, int] = field(default_factory=dict)


def bot_game(levels: tuple[Level, Level], rng: random.Random, dice: random.Random) -> BotGame:
    """Two bots play one game to its end in process: each decision is
    ``server.bot.player.choose`` (what a ``BotPlayer`` sends) on the game's snapshot, a play
    always one of the offered ones; the rules engine refuses any other action."""
    game = Game(dice=ScriptedDice([dice.randint(1, 6) for _ in range(3000)]))
    game.start()
    played = BotGame({})
    for _ in range(2000):
        if game.is_over:
            break
        snapshot: dict[str, Any] = game.to_dict()
        side = int(snapshot["to_act"])
        choice = choose(levels[side], snapshot, side, rng.getrandbits(32))
        assert choice is not None
        kind, play = choice
        if kind == "roll":
            game.roll(side)
        elif kind == "double":
            played.doubles += 1
            game.double(side)
        elif kind in ("take", "drop"):
            played.answers[kind] = played.answers.get(kind, 0) + 1
            if kind == "take":
                game.take(side)
            else:
                game.drop(side)
        else:
            assert kind == "play" and play is not None
            offered = [tuple(map(tuple, p)) for p in snapshot["legal_plays"]]
            assert play in offered
            game.play(side, [list(s) for s in play])
    assert game.is_over
    outcome = game.to_dict()["outcome"]
    assert isinstance(outcome, dict)
    played.outcome = outcome
    return played


@pytest.mark.parametrize("level", list(Level))
def test_whole_games_choose_only_offered_plays(level: Level) -> None:
    rng = random.Random(42)
    dice = random.Random(7)
    games = 1 if level is Level.ADVANCED else 4
    for _ in range(games):
        bot_game((level, level), rng, dice)


BOT_GAMES = 20


@pytest.mark.parametrize("level", [Level.RANDOM, Level.BEGINNER])
def test_bot_against_bot_twenty_games_legal_plays_and_the_cube(level: Level) -> None:
    """Twenty games a level against itself: every game ends by a play or a dropped
    double, every action is one the rules allow, and the cube is offered and every offer
    answered. Two games over sockets: ``tests/server/test_computer.py``."""
    opponent = level
    rng = random.Random(7)
    dice = random.Random(11)
    games = [bot_game((level, opponent), rng, dice) for _ in range(BOT_GAMES)]
    assert {g.outcome["reason"] for g in games} <= {"normal", "drop"}
    doubles = sum(g.doubles for g in games)
    answers = sum(sum(g.answers.values()) for g in games)
    assert doubles > 0 and answers == doubles

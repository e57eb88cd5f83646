"""The computer players' pure core: shots, the evaluation, the cube thresholds, and every
choice one of the offered plays (whole games with the rules engine, no sockets)."""

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
from server.bot.strategy import (
    DOUBLE_AT,
    TAKE_AT,
    Level,
    choose_play_index,
    cube_action,
    take_action,
    two_ply,
)
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


def test_basic_makes_the_three_one_point_with_an_opening_three_one() -> None:
    mine, theirs = start()
    position = Position.initial()
    plays = [[list(step) for step in p] for p in legal_results(position, (3, 1)).values()]
    index = choose_play_index(Level.BASIC, mine, theirs, plays, random.Random(1))
    assert sorted(map(tuple, plays[index])) == [(6, 5), (8, 5)]


def test_strong_looks_at_the_opponents_replies() -> None:
    mine, theirs = start()
    a, b = after_play(mine, theirs, [(8, 5), (6, 5)])
    slot, slot_b = after_play(mine, theirs, [(13, 10), (6, 5)])
    # Two blots in the opponent's direct range are worse after the replies than a point.
    assert two_ply(a, b) > two_ply(slot, slot_b)
    position = Position.initial()
    assert len(legal_outcomes(position, (3, 1))) == len(legal_results(position, (3, 1)))


@pytest.mark.parametrize(("p", "doubles", "takes"), [
    (0.95, False, True), (0.80, True, True), (DOUBLE_AT, True, True), (0.60, False, True),
    (0.30, False, True), (TAKE_AT, False, True), (0.20, False, False), (0.05, False, False),
])
def test_cube_thresholds(p: float, doubles: bool, takes: bool,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    import server.bot.strategy as strategy

    monkeypatch.setattr(strategy, "win_probability", lambda a, b, on_roll: p)
    mine, theirs = start()
    assert cube_action(Level.STRONG, mine, theirs, random.Random(0)) is doubles
    assert take_action(Level.STRONG, mine, theirs, random.Random(0)) is takes


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
    games = 2 if level is Level.STRONG else 6
    for _ in range(games):
        bot_game((level, level), rng, dice)


BOT_GAMES = 20


@pytest.mark.parametrize("level", [Level.RANDOM, Level.BASIC, Level.STRONG])
def test_bot_against_bot_twenty_games_legal_plays_and_the_cube(level: Level) -> None:
    """Twenty games a level (the strong bot meets the basic one: it is the slow side, and
    one of it is enough): every game ends by a play or a dropped double, every action is
    one the rules allow, and the cube is offered and every offer answered. Two games over
    sockets: ``tests/server/test_computer.py``."""
    opponent = Level.BASIC if level is Level.STRONG else level
    rng = random.Random(7)
    dice = random.Random(11)
    games = [bot_game((level, opponent), rng, dice) for _ in range(BOT_GAMES)]
    assert {g.outcome["reason"] for g in games} <= {"normal", "drop"}
    doubles = sum(g.doubles for g in games)
    answers = sum(sum(g.answers.values()) for g in games)
    assert doubles > 0 and answers == doubles

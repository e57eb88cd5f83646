"""The computer players' pure core: a play applied to both sides, and every choice one of
the offered plays (whole games with the rules engine, no sockets)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from server.bot.evaluation import after_play
from server.bot.player import choose
from server.bot.strategy import Level, decide
from server.rules import Game, Position, ScriptedDice, legal_outcomes, legal_results


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

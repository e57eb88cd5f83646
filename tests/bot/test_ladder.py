"""The computer's ladder (server/bot/ladder.py): GNU Backgammon's rating words pinned, each
rung named by its measured rate, the steps between rungs, the old names as aliases, and the
protocol's level names the same as the levels'."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from server.bot.ladder import ALIASES, LADDER, RATINGS, rated_words, rung
from server.bot.strategy import LEVEL_NAMES, Level, decide
from server.protocol.messages import BotLevel
from server.rules import Game, ScriptedDice

# GNU Backgammon's error-rating scale (mEMG per unforced checker play).
WORDS = [
    (0.0, "supernatural"), (1.99, "supernatural"), (2.0, "world class"), (4.99, "world class"),
    (5.0, "expert"), (7.99, "expert"), (8.0, "advanced"), (11.99, "advanced"),
    (12.0, "intermediate"), (17.99, "intermediate"), (18.0, "casual"), (25.99, "casual"),
    (26.0, "beginner"), (34.99, "beginner"), (35.0, "awful"), (400.0, "awful"),
]


@pytest.mark.parametrize(("memg", "words"), WORDS)
def test_rated_words_follow_gnubgs_scale(memg: float, words: str) -> None:
    assert rated_words(memg) == words


def test_the_scale_is_pinned() -> None:
    assert [bound for bound, _ in RATINGS] == [2.0, 5.0, 8.0, 12.0, 18.0, 26.0, 35.0]


@pytest.mark.parametrize("step", LADDER, ids=lambda r: r.name)
def test_each_rung_is_named_by_its_measured_rate(step: Any) -> None:
    assert step.words.replace(" ", "_") == step.name
    assert step.low <= step.memg <= step.high
    assert step.depth in (0, 1, 2) and step.noise >= 0.0


def test_the_rungs_step_evenly_from_weakest_to_strongest() -> None:
    rates = [r.memg for r in LADDER]
    assert rates == sorted(rates, reverse=True)
    steps = [a - b for a, b in itertools.pairwise(rates)]
    assert max(steps) <= 1.5 * min(steps)
    assert LADDER[-1].noise == 0.0 and LADDER[-1].depth == max(r.depth for r in LADDER)


@pytest.mark.parametrize(("old", "new"), [("basic", Level.BEGINNER), ("strong", Level.CASUAL),
                                          ("expert", Level.ADVANCED)])
def test_the_old_names_are_aliases(old: str, new: Level) -> None:
    assert Level(old) is new
    assert rung(old) is new.rung
    assert ALIASES[old] == str(new)


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError):
        Level("grandmaster")
    with pytest.raises(KeyError):
        rung("grandmaster")


def test_the_protocol_knows_every_level_and_alias() -> None:
    assert [str(level) for level in BotLevel] == list(LEVEL_NAMES)
    assert [r.name for r in LADDER] == [str(x) for x in Level if x is not Level.RANDOM]


def test_a_noisy_rung_is_reproducible_by_its_seed_and_varies_with_it() -> None:
    game = Game(dice=ScriptedDice([6, 2]), cube_enabled=False)
    game.start()
    snapshot: dict[str, Any] = game.to_dict()
    side = int(snapshot["to_act"])
    offered = [tuple(map(tuple, p)) for p in snapshot["legal_plays"]]

    def play(seed: int) -> Any:
        decision = decide(Level.BEGINNER, snapshot, side, random.Random(seed))
        assert decision is not None and decision.play in offered
        return decision.play

    assert play(5) == play(5)
    assert len({play(seed) for seed in range(40)}) > 1

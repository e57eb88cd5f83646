"""The game review: equity lost per decision, luck per roll, per-player summaries; .mat
reading and the command line."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from server.bot.neural import default_net, equity, evaluate_batch, roll_afterstates
from server.bot.review import (
    Turn,
    format_review,
    review,
    review_mat,
    turns_from_events,
    turns_from_mat,
)
from server.rules import Game, Position, ScriptedDice, Side, Step
from server.rules.mat import export_mat, import_mat
from server.rules.moves import legal_results

ROOT = Path(__file__).resolve().parents[2]


class Dice:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def roll_die(self) -> int:
        return self.rng.randint(1, 6)


def best_and_worst_game(seed: int, cube: bool = False) -> Game:
    """A whole game: side 0 plays the evaluator's best 0-ply play every time, side 1 its
    worst. Side 1 doubles once at its first turn when the cube is on; side 0 takes."""
    net = default_net()
    game = Game(dice=Dice(seed), cube_enabled=cube)
    game.start()
    doubled = False
    while not game.is_over:
        state: dict[str, Any] = game.to_dict()
        who = int(state["to_act"])
        if state["phase"] == "roll":
            if cube and who == 1 and not doubled and state["can_double"]:
                doubled = True
                game.double(who)
            else:
                game.roll(who)
            continue
        if state["phase"] == "double_offered":
            game.take(who)
            continue
        position = game.position
        results = legal_results(position, game.dice)  # type: ignore[arg-type]
        afters = list(results)
        mine = np.array([a.checkers(Side(who)) for a in afters])
        theirs = np.array([a.checkers(Side(1 - who)) for a in afters])
        values = equity(evaluate_batch(net, mine, theirs))
        pick = int(np.argmax(values)) if who == 0 else int(np.argmin(values))
        game.play(who, [list(s) for s in results[afters[pick]]])
    return game


def test_mat_export_is_read_back_entry_by_entry() -> None:
    game = best_and_worst_game(1, cube=True)
    games = import_mat(export_mat(game, names=("alice", "bob")))
    assert len(games) == 1
    read = games[0]
    assert read.names == ("alice", "bob") and read.match_length == 0
    kinds = [a.kind for a in read.actions]
    history = [r.kind for r in game.history if r.kind in ("play", "double", "take", "drop")]
    assert kinds[:-1] == history and kinds[-1] == "win"
    plays = [a for a in read.actions if a.kind == "play"]
    records = [r for r in game.history if r.kind == "play"]
    assert [a.dice for a in plays] == [r.dice for r in records]
    assert [int(a.side) for a in plays] == [int(r.side) for r in records]


def test_the_best_player_loses_nothing_and_the_worst_a_lot() -> None:
    game = best_and_worst_game(2)
    # The game was played without the cube: its checker plays only (a .mat file cannot
    # say the cube was off, so its rolls would count as decisions not to double).
    turns = [t for t in turns_from_mat(import_mat(export_mat(game))[0]) if t.kind == "play"]
    result = review(turns, depth=0)  # the players' own judge: the evaluator at 0 ply
    best, worst = result["players"]
    assert best["error_total"] == 0.0 and best["error_rate_memg"] == 0.0
    assert best["worst"] == []
    assert worst["error_rate_memg"] > 0.0
    decisions = result["decisions"]
    assert len(worst["worst"]) == 3
    errors = [decisions[i]["error"] for i in worst["worst"]]
    assert errors == sorted(errors, reverse=True)
    assert errors[0] == max(d["error"] for d in decisions if d["side"] == 1)
    for d in decisions:
        assert d["error"] >= 0.0
        if d["kind"] == "play" and d["forced"]:
            assert d["error"] == 0.0
        if d["kind"] == "play" and d["error"] == 0.0 and not d["forced"]:
            assert d["played"] == d["best"]


def test_luck_averages_to_nothing_over_all_the_rolls() -> None:
    # The luck of each of the 36 rolls from one position, weighted, sums to zero.
    position = Position.initial().apply((Step(24, 18), Step(13, 11)))  # side 1 to roll
    mine, theirs = list(position.checkers(Side.ONE)), list(position.checkers(Side.ZERO))
    net = default_net()
    rolls = [(a, b) for a in range(1, 7) for b in range(a, 7)]
    m, t, sizes = roll_afterstates(mine, theirs, rolls)
    values = equity(evaluate_batch(net, m, t))
    total = 0.0
    at = 0
    for (a, b), size in zip(rolls, sizes, strict=True):
        best = legal_results(position, (a, b))
        after = max(best, key=lambda p: float(equity(evaluate_batch(
            net, np.array([p.checkers(Side.ONE)]), np.array([p.checkers(Side.ZERO)])))[0]))
        turn = Turn("play", Side.ONE, position, (a, b), after)
        luck = review([turn], depth=0)["decisions"][0]["luck"]
        assert review([turn], depth=0)["decisions"][0]["error"] == 0.0
        total += luck * (1 if a == b else 2)
        assert luck == pytest.approx(float(values[at:at + size].max()) - float(
            np.dot([values[x:x + s].max() for x, s in zip(
                np.cumsum([0, *sizes[:-1]]), sizes, strict=True)],
                [1 if r[0] == r[1] else 2 for r in rolls]) / 36), abs=1e-3)
        at += size
    assert total / 36 == pytest.approx(0.0, abs=2e-3)


def test_cube_decisions_are_reviewed() -> None:
    game = best_and_worst_game(3, cube=True)
    result = review(turns_from_mat(import_mat(export_mat(game))[0]))
    kinds = [d["kind"] for d in result["decisions"]]
    assert "double" in kinds and "take" in kinds and "no_double" in kinds
    double = result["decisions"][kinds.index("double")]
    take = result["decisions"][kinds.index("take")]
    assert double["side"] == 1 and take["side"] == 0
    assert double["best"] in ("double", "no_double") and take["best"] in ("take", "drop")


def test_a_play_that_is_not_legal_is_refused() -> None:
    start = Position.initial()
    wrong = start.apply((Step(24, 20), Step(13, 11)), pass_turn=False)
    with pytest.raises(ValueError, match="not a legal play"):
        review([Turn("play", Side.ZERO, start, (3, 1), wrong)])


def test_a_scripted_game_from_its_events() -> None:
    # The events' full states, as a stored game record keeps them (protocol 1 form).
    game = Game(dice=ScriptedDice([3, 1, 6, 6, 5, 2]), cube_enabled=True)
    game.start()
    events: list[dict[str, Any]] = [{"type": "game_start", "state": {"game": game.to_dict()}}]
    mover = int(game.turn)  # type: ignore[arg-type]
    game.play(mover, [[8, 5], [6, 5]])
    events.append({"type": "moved", "side": mover, "state": {"game": game.to_dict()}})
    other = 1 - mover
    game.roll(other)
    events.append({"type": "rolled", "side": other, "dice": [6, 6], "passed": False,
                   "state": {"game": game.to_dict()}})
    game.play(other, [[24, 18], [24, 18], [13, 7], [13, 7]])
    events.append({"type": "moved", "side": other, "state": {"game": game.to_dict()}})
    game.double(mover)
    events.append({"type": "doubled", "side": mover, "cube": 2,
                   "state": {"game": game.to_dict()}})
    game.drop(other)
    events.append({"type": "dropped", "side": other, "cube": 2,
                   "state": {"game": game.to_dict()}})
    turns = turns_from_events(events)
    assert [t.kind for t in turns] == ["play", "no_double", "play", "double", "drop"]
    assert turns[0].opening and not turns[2].opening
    result = review(turns)
    opening = result["decisions"][0]
    assert opening["played"] == "8/5 6/5" and opening["dice"] == [3, 1]
    assert result["decisions"][2]["played"] == "24/18(2) 13/7(2)"
    assert result["players"][mover]["moves"] == 1


def test_review_of_a_match_file_and_its_text_report(tmp_path: Path) -> None:
    game = best_and_worst_game(4)
    text = export_mat(game, names=("best", "worst"))
    games = review_mat(text)
    assert games[0]["names"] == ["best", "worst"]
    report = format_review(games)
    assert "best: " in report and "worst: #" in report and "mEMG per move" in report


def test_the_command_line_reviews_a_mat_file(tmp_path: Path) -> None:
    game = best_and_worst_game(5)
    path = tmp_path / "game.mat"
    path.write_text(export_mat(game, names=("alice", "bob")))
    run = subprocess.run([sys.executable, "-m", "server.bot.review", str(path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "alice (side 0) vs bob (side 1)" in run.stdout
    assert "mEMG per move" in run.stdout
    as_json = subprocess.run([sys.executable, "-m", "server.bot.review", "--json", str(path)],
                             capture_output=True, text=True, cwd=ROOT, timeout=120,
                             check=False)
    assert as_json.returncode == 0, as_json.stderr
    games = json.loads(as_json.stdout)
    assert games[0]["players"][1]["error_rate_memg"] > 0
    missing = subprocess.run([sys.executable, "-m", "server.bot.review",
                              str(tmp_path / "none.mat")],
                             capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert missing.returncode == 2
    assert missing.stderr.startswith("python -m server.bot.review: cannot read ")
    assert missing.stderr.count("\n") == 1


def test_a_gnubg_style_mat_line_is_read() -> None:
    text = """
 3 point match

 Game 1
 alice : 0                     bob : 0
  1) 31: 8/5 6/5                 42: 13/9 24/22
  2) 66: 24/18(2) 13/7(2)         Doubles => 2
  3)  Takes                      51: bar/20 6/5
  4)                             Wins 2 points
"""
    games = import_mat(text)
    actions = games[0].actions
    assert games[0].match_length == 3 and games[0].names == ("alice", "bob")
    assert [(int(a.side), a.kind) for a in actions] == [
        (0, "play"), (1, "play"), (0, "play"), (1, "double"), (0, "take"), (1, "play"),
        (1, "win")]
    assert actions[2].steps == ((24, 18), (24, 18), (13, 7), (13, 7))
    assert actions[5].steps == ((25, 20), (6, 5))


def test_the_review_searches_as_the_top_level_and_says_so() -> None:
    # Searched, the 0-ply best play of a position may lose to another; the errors are then
    # measured at the deepest ply both plays reached, never negative, and the judge says it.
    game = best_and_worst_game(2)
    turns = [t for t in turns_from_mat(import_mat(export_mat(game))[0]) if t.kind == "play"]
    searched = review(turns[:12])
    flat = review(turns[:12], depth=0)
    assert "advanced level's search" in searched["judge"] and "0 ply" in flat["judge"]
    assert (searched["search_depth"], flat["search_depth"]) == (2, 0)
    for deep, shallow in zip(searched["decisions"], flat["decisions"], strict=True):
        assert deep["error"] >= 0.0 and deep["forced"] == shallow["forced"]
        assert deep["luck"] == shallow["luck"]
        if deep["forced"]:
            assert deep["error"] == 0.0

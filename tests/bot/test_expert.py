"""The expert level's pure core: the network's encoding and outputs, a seeded training run,
legal choices in whole games, cube decisions, the match table."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from server.bot import cube as cube_mod
from server.bot.cube import (
    CubeState,
    MatchContext,
    match_equities,
    met,
    money_equities,
    should_double,
    should_take,
)
from server.bot.expert import choose_play, double_decision, take_decision
from server.bot.neural import (
    INPUTS,
    Net,
    afterstates,
    default_net,
    encode,
    equity,
    evaluate_batch,
    flip,
    roll_afterstates,
)
from server.bot.strategy import Level, decide
from server.bot.train import START, load_checkpoint, train
from server.rules import Game, Position, ScriptedDice, Side, legal_outcomes, legal_results

EMPTY = [0] * 26


def side(points: dict[int, int]) -> list[int]:
    """A side's 26 counts from ``{point: checkers}`` (the rest borne off)."""
    counts = [0] * 26
    for point, n in points.items():
        counts[point] = n
    counts[0] = 15 - sum(points.values())
    return counts


def test_the_encoding_of_the_starting_position() -> None:
    start = np.array([START], dtype=np.int64)
    x = encode(start, start)
    assert x.shape == (1, INPUTS) == (1, 198)
    row = x[0]
    # Point 6 holds 5 checkers: units (1, 1, 1, (5 - 3) / 2); point 24 two: (1, 1, 0, 0).
    assert list(row[5 * 4:6 * 4]) == [1.0, 1.0, 1.0, 1.0]
    assert list(row[23 * 4:24 * 4]) == [1.0, 1.0, 0.0, 0.0]
    assert list(row[0:4]) == [0.0, 0.0, 0.0, 0.0]
    assert row[96] == 0.0 and row[97] == 0.0 and row[98] == pytest.approx(1.67)
    assert np.array_equal(row[:99], row[99:])  # both sides alike


def test_the_encoding_counts_the_bar_and_the_borne_off() -> None:
    mine = side({25: 2, 6: 3})
    theirs = side({1: 1})
    x = encode(np.array([mine]), np.array([theirs]))[0]
    assert x[96] == 1.0  # two on the bar, halved
    assert x[97] == pytest.approx(10 / 15)
    assert x[99 + 97] == pytest.approx(14 / 15)
    assert x[99 + 98] == pytest.approx(0.01)


def test_the_float32_encoding_is_the_float64_one_rounded_once() -> None:
    # A float32 net's inputs are made in float32 directly; each is the float64 input rounded
    # once, as a cast of the float64 encoding would give (the bot's choices do not change).
    rng = np.random.default_rng(5)
    mine = np.array([rng.multinomial(15, np.full(26, 1 / 26)) for _ in range(500)])
    theirs = np.array([rng.multinomial(15, np.full(26, 1 / 26)) for _ in range(500)])
    wide = encode(mine, theirs)
    narrow = encode(mine, theirs, np.float32)
    assert wide.dtype == np.float64 and narrow.dtype == np.float32
    assert np.array_equal(narrow.view(np.uint32), wide.astype(np.float32).view(np.uint32))


def test_flip_is_its_own_inverse_and_equity_is_antisymmetric() -> None:
    out = np.array([0.6, 0.2, 0.05, 0.1, 0.01])
    assert np.allclose(flip(flip(out)), out)
    assert equity(flip(out)) == pytest.approx(-equity(out))
    assert equity(np.array([1.0, 1.0, 1.0, 0.0, 0.0])) == pytest.approx(3.0)


def test_afterstates_are_the_rules_engines_results_with_hits_on_the_bar() -> None:
    mover = side({24: 2, 13: 5, 8: 3, 6: 5})
    other = side({24: 1, 20: 1, 13: 5, 8: 3, 6: 5})  # blots on my 1 and 5 points: hittable
    mine, theirs = afterstates(mover, other, (6, 5))
    assert len(mine) == len(legal_outcomes(
        Position.from_points({24: 2, 13: 5, 8: 3, 6: 5}, {24: 1, 20: 1, 13: 5, 8: 3, 6: 5}),
        (6, 5)))
    assert (mine.sum(axis=1) == 15).all() and (theirs.sum(axis=1) == 15).all()
    assert theirs[:, 25].max() >= 1  # some play hits
    position = Position.from_points({24: 2, 13: 5, 8: 3, 6: 5},
                                    {24: 1, 20: 1, 13: 5, 8: 3, 6: 5})
    expected = sorted((tuple(p.checkers(Side.ZERO)), tuple(p.checkers(Side.ONE)))
                      for p in legal_results(position, (6, 5)))
    assert sorted(zip(map(tuple, mine.tolist()), map(tuple, theirs.tolist()),
                      strict=True)) == expected
    blocks, _, sizes = roll_afterstates(mover, other, [(6, 5), (1, 1)])
    assert sizes[0] == len(mine) and len(blocks) == sum(sizes)


def test_a_finished_game_is_scored_exactly() -> None:
    net = default_net()
    won = side({})
    gammoned = side({12: 15})  # none off, none in the winner's home: a gammon
    out = evaluate_batch(net, np.array([won, won]), np.array([gammoned, side({1: 14})]))
    assert list(out[0]) == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert list(out[1]) == [1.0, 0.0, 0.0, 0.0, 0.0]


def test_a_seeded_training_run_is_reproducible(tmp_path: Path) -> None:
    first = train(3, seed=5, hidden=8, out=tmp_path / "a.npz", checkpoint_every=0, log_every=0)
    again = train(3, seed=5, hidden=8, out=tmp_path / "b.npz", checkpoint_every=0, log_every=0)
    initial = Net.random(8, np.random.default_rng(5))
    assert np.array_equal(first.w1, again.w1) and np.array_equal(first.w2, again.w2)
    assert not np.array_equal(first.w1, initial.w1)  # it learned something
    loaded = Net.load(tmp_path / "a.npz")
    assert loaded.w1.shape == (INPUTS, 8)
    other = train(3, seed=6, hidden=8, out=tmp_path / "c.npz", checkpoint_every=0, log_every=0)
    assert not np.array_equal(first.w1, other.w1)


def test_a_run_resumed_from_a_checkpoint_ends_as_the_uninterrupted_run(tmp_path: Path) -> None:
    whole = train(40, seed=5, hidden=8, out=tmp_path / "run.npz", checkpoint_every=20,
                  log_every=0)
    checkpoint = tmp_path / "run-20.npz"
    assert checkpoint.exists()
    resumed = train(40, seed=0, hidden=1, out=tmp_path / "again.npz", checkpoint_every=0,
                    log_every=0, resume=load_checkpoint(checkpoint))
    for name in ("w1", "b1", "w2", "b2"):
        assert np.array_equal(getattr(whole, name), getattr(resumed, name))
    assert Net.load(checkpoint).w1.shape == (198, 8)  # a checkpoint also loads as weights
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(tmp_path / "run.npz")


def test_the_shipped_weights_load_and_are_small() -> None:
    from server.bot.neural import WEIGHTS

    assert WEIGHTS.stat().st_size < 400_000
    net = default_net()
    start = np.array([START], dtype=np.int64)
    out = net.forward(encode(start, start))[0]
    assert ((out >= 0.0) & (out <= 1.0)).all()


def play(game: Game, levels: tuple[Level, Level], rng: random.Random) -> int:
    """Play ``game`` out with ``levels`` (searching one roll deep at most: the two-roll
    search is the same code on more positions); returns the number of decisions."""
    decisions = 0
    while not game.is_over and decisions < 2000:
        snapshot: dict[str, Any] = game.to_dict()
        who = int(snapshot["to_act"])
        decision = decide(levels[who], snapshot, who, rng, quick=True)
        assert decision is not None
        decisions += 1
        if decision.kind == "play":
            assert decision.play is not None
            offered = [tuple(map(tuple, p)) for p in snapshot["legal_plays"]]
            assert decision.play in offered  # always one of the offered plays
            game.play(who, [list(s) for s in decision.play])
        else:
            getattr(game, {"roll": "roll", "double": "double", "take": "take",
                           "drop": "drop", "accept_resign": "accept_resignation"}[
                decision.kind])(who)
    return decisions


def test_the_expert_plays_whole_games_legally_with_the_cube() -> None:
    rng = random.Random(11)
    for n in range(2):
        game = Game(dice=_Dice(random.Random(100 + n)), cube_enabled=True)
        game.start()
        pair = (Level.ADVANCED, Level.BEGINNER)
        levels = pair if n % 2 == 0 else (pair[1], pair[0])
        play(game, levels, rng)
        assert game.is_over


def test_the_expert_plays_a_match_game_legally() -> None:
    from server.rules import Match

    match = Match(3, dice=_Dice(random.Random(5)))
    rng = random.Random(3)
    while not match.is_over:
        game = match.next_game()
        if game.turn is None:
            game.start()
        play(game, (Level.ADVANCED, Level.CASUAL), rng)
        assert game.is_over


class _Dice:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def roll_die(self) -> int:
        return self.rng.randint(1, 6)


def test_the_expert_takes_the_only_play_and_prefers_a_safe_bear_off() -> None:
    # Bearing off against a checker on the bar-side: 6-5 with 2 checkers on my 6 and 5
    # points: both come off (the only winning play is among the offered ones).
    mine = side({6: 1, 5: 1})
    theirs = side({1: 1})
    plays = [[[6, 0], [5, 0]], [[6, 1], [5, 0]]]
    assert choose_play(mine, theirs, plays) == 0
    assert choose_play(mine, theirs, [[[6, 0], [5, 0]]]) == 0


def test_cube_decisions_in_clear_positions() -> None:
    start = list(START)
    money = CubeState()
    assert not double_decision(start, start, money)  # never double at the start
    assert take_decision(start, start, money)  # and take if doubled there
    # The doubler bears its last two checkers off next roll whatever it rolls, and the
    # taker has 14 checkers off: no game left, a drop.
    taker = side({6: 1})
    doubler = side({1: 2})
    assert not take_decision(taker, doubler, money)


def outputs(win: float, gammon: float = 0.0) -> np.ndarray:
    return np.array([win, gammon * win, 0.0, gammon * (1 - win), 0.0])


def test_the_fitted_constants() -> None:
    # Fitted by bench/cube_fit.py (see the module docstring of server.bot.cube).
    assert (cube_mod.LIVE_MONEY, cube_mod.TAKE_MARGIN, cube_mod.LIVE_MATCH,
            cube_mod.TABLE_LIVE, cube_mod.GAMMON_RATE) == (0.62, 0.18, 0.64, 0.80, 0.26)


@pytest.mark.parametrize(("win", "gammon", "owned", "expected", "doubles"), [
    (0.60, 0.0, False, (0.2827, 0.1520), False),  # too early
    (0.68, 0.0, False, (0.5088, 0.5216), True),  # in the window, centred cube
    (0.72, 0.0, False, (0.6219, 0.7064), True),
    (0.72, 0.0, True, (0.6632, 0.7064), True),  # the owner's cube is worth more to keep
    (0.78, 0.0, True, (0.8018, 0.9836), True),
    (0.82, 0.0, False, (0.8632, 1.1684), True),  # a cash
    (0.85, 0.3, False, (1.0437, 1.7270), False),  # too good: plays on for the gammon
    (0.90, 0.5, False, (1.2775, 2.3380), False),
])
def test_money_equities(win: float, gammon: float, owned: bool,
                        expected: tuple[float, float], doubles: bool) -> None:
    no_double, take, drop = money_equities(outputs(win, gammon), owned)
    assert (no_double, take, drop) == pytest.approx((*expected, 1.0), abs=1e-4)
    assert (min(take, drop) > no_double) is doubles
    assert should_double(outputs(win, gammon), CubeState(1, owned)) is doubles


@pytest.mark.parametrize(("win", "gammon", "takes"), [
    (0.50, 0.0, True), (0.30, 0.0, True), (0.28, 0.0, True), (0.25, 0.0, False),
    (0.18, 0.0, False), (0.35, 0.1, True),
    (0.35, 0.26, False),  # the doubler's gammons (a share of the taker's losses): a drop
])
def test_money_take_point(win: float, gammon: float, takes: bool) -> None:
    out = np.array([win, 0.0, 0.0, gammon, 0.0])
    assert should_take(out, CubeState()) is takes


@pytest.mark.parametrize(("away", "value"), [
    ((2, 2), 0.5), ((2, 4), 0.6765), ((3, 5), 0.6518), ((4, 7), 0.6993),
    ((1, 2), 0.685), ((1, 3), 0.75),  # the Crawford game
])
def test_match_table_values(away: tuple[int, int], value: float) -> None:
    assert met(*away) == pytest.approx(value, abs=1e-4)


@pytest.mark.parametrize(("b", "value"), [(1, 0.5), (2, 0.5), (3, 0.685), (5, 0.8184)])
def test_post_crawford_values(b: int, value: float) -> None:
    assert met(1, b, True) == pytest.approx(value, abs=1e-4)
    assert met(b, 1, True) == pytest.approx(1.0 - value, abs=1e-4)


@pytest.mark.parametrize(("away", "win", "expected", "doubles", "takes"), [
    ((3, 1), 0.45, (0.2538, 0.2700, 0.5), True, True),  # post-Crawford: a free double
    ((4, 4), 0.50, (0.5000, 0.4568, 0.5767), False, True),
    ((4, 4), 0.70, (0.5559, 0.5705, 0.5767), True, True),
    ((5, 5), 0.72, (0.5570, 0.5687, 0.5771), True, True),
    ((2, 4), 0.60, (0.7294, 0.6576, 0.8185), False, True),  # the leader keeps the cube
])
def test_match_equities(away: tuple[int, int], win: float, expected: tuple[float, ...],
                        doubles: bool, takes: bool) -> None:
    state = CubeState(1, False, MatchContext(7, *away))
    assert match_equities(outputs(win, 0.2), state) == pytest.approx(expected, abs=1e-4)
    assert should_double(outputs(win, 0.2), state) is doubles
    assert should_take(outputs(1 - win, 0.2), state) is takes


def test_the_match_table_is_symmetric_and_sane() -> None:
    assert met(1, 1) == pytest.approx(0.5)
    for a in range(1, 12):
        for b in range(1, 12):
            assert met(a, b) + met(b, a) == pytest.approx(1.0)
            assert met(a, b) >= met(a + 1, b)
    assert met(0, 3) == 1.0 and met(3, 0) == 0.0
    assert cube_mod.match_table()[2][4] > 0.6


def test_match_cube_decisions() -> None:
    # Post-Crawford: the trailer (3 away against 1 away) doubles at once: a free double
    # (its gammons count double); gammonless, winning 1 or 2 points is worth the same.
    trailer = CubeState(1, False, MatchContext(5, 3, 1))
    assert should_double(outputs(0.45, 0.2), trailer)
    # The leader at 1 away never needs the cube; doubling an even game at 2-away/2-away
    # is not right either with a dead-cube view, but a clear take holds.
    even = CubeState(1, False, MatchContext(5, 4, 4))
    assert not should_double(outputs(0.5), even)
    assert should_take(outputs(0.5), even)
    assert not should_take(outputs(0.05), even)


def test_a_gammonish_play_counts_in_a_match() -> None:
    # At 1-away/1-away (double match point) gammons are worth nothing: the match value
    # is the plain winning chance.
    context = MatchContext(1, 1, 1)
    out = np.array([0.6, 0.5, 0.1, 0.1, 0.0])
    assert float(context.mwc(out, 1)) == pytest.approx(0.6)


def test_scripted_game_opening_is_played_by_the_expert() -> None:
    game = Game(dice=ScriptedDice([3, 1]), cube_enabled=False)
    game.start()
    snapshot: dict[str, Any] = game.to_dict()
    who = int(snapshot["to_act"])
    decision = decide(Level("expert"), snapshot, who, random.Random(1))
    assert decision is not None and decision.kind == "play"
    assert decision.play in [tuple(map(tuple, p)) for p in snapshot["legal_plays"]]
    assert Side(who) in (Side.ZERO, Side.ONE)

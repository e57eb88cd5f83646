"""The computer's levels judged on one set of positions by GNU Backgammon 0-ply.

Run from the repository root (after ``python3 -m pip install -e .``)::

    nice -n 10 python3 bench/ladder.py --games 100 --seed 11 --levels beginner,advanced
    nice -n 10 python3 bench/ladder.py --games 100 --seed 11 --review

The positions: ``--games`` cubeless games of the shipped evaluator against itself at 0 ply
(seeded dice, seed ``--seed``), every checker play with two or more
distinct results kept with its roll and offered plays. GNU Backgammon
(``bench/gnubg_judge.py``, the judge only) evaluates the position after each offered play
once, at 0 ply, cubeless (the judged set is cached in ``--cache``: the levels are then
judged against the same positions, so their difference is measured on the same decisions,
not on different games).

Per level: each position's decision (the level's own ``decide``, seeded per position), its
error (gnubg's best play's equity less the chosen play's, in thousandths: mEMG), the mean
with its 95% interval (mean ± 1.96 standard errors), gnubg's word for the rate (its error
rating scale), and the decision time (median, p99).

``--review``: the review's error of the play made in each position (``server.bot.review``,
the same evaluator and search as the best level) against gnubg's error of that play: the
correlation over every unforced play of the games, the mean difference, and the share of
plays both call errors.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.bots import SeededDice, unforced_turns  # noqa: E402
from server.bot.evaluation import after_play, sides_from_board  # noqa: E402
from server.bot.expert import plays_as_states  # noqa: E402
from server.bot.ladder import rated_words  # noqa: E402
from server.bot.neural import default_net, equity, evaluate_batch  # noqa: E402
from server.bot.strategy import Level, decide  # noqa: E402
from server.rules import Game  # noqa: E402

PLAY_NOISE = 0.0
"""The noise (equity, standard deviation) of the plays made in the games of the positions."""
REVIEW_NOISE = 0.05
"""The noise of the plays the review is asked about (so they have errors of every size)."""


def play_positions(games: int, seed: int) -> list[dict[str, Any]]:
    """The unforced checker plays of ``games`` self-play games of the evaluator at 0 ply
    (with :data:`PLAY_NOISE` added to each play's equity)."""
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    net = default_net()
    found: list[dict[str, Any]] = []
    for number in range(games):
        game = Game(dice=SeededDice(rng), cube_enabled=False)
        game.start()
        for snapshot, side, plays in unforced_turns(game):
            mine, theirs = sides_from_board(snapshot["board"], snapshot["bar"],
                                            snapshot["off"], side)
            a, b = plays_as_states(mine, theirs, plays)
            values = equity(evaluate_batch(net, a, b))
            if PLAY_NOISE:
                values += noise.normal(0.0, PLAY_NOISE, len(values))
            index = int(np.argmax(values))
            found.append({"game": number, "side": side, "snapshot": snapshot,
                          "played": index})
            game.play(side, [list(s) for s in plays[index]])
    return found


def judged_positions(games: int, seed: int, cache: Path) -> list[dict[str, Any]]:
    """:func:`play_positions` with gnubg's equity after every offered play (cached)."""
    path = cache / f"ladder-{games}-{seed}-{PLAY_NOISE}.json"
    if path.exists():
        loaded: list[dict[str, Any]] = json.loads(path.read_text())
        return loaded
    from bench.gnubg_judge import Judge

    positions = play_positions(games, seed)
    judge = Judge()
    try:
        for at, entry in enumerate(positions):
            snapshot = entry["snapshot"]
            mine, theirs = sides_from_board(snapshot["board"], snapshot["bar"],
                                            snapshot["off"], entry["side"])
            outs = judge.evaluate_after([after_play(mine, theirs, p)
                                         for p in snapshot["legal_plays"]])
            entry["gnubg"] = [round(o[5], 6) for o in outs]
            if (at + 1) % 500 == 0:
                print(f"judged {at + 1}/{len(positions)}", file=sys.stderr, flush=True)
    finally:
        judge.close()
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(positions))
    return positions


def interval(errors: list[float]) -> tuple[float, float, float]:
    mean = statistics.fmean(errors)
    half = 1.96 * statistics.stdev(errors) / math.sqrt(len(errors)) if len(errors) > 1 else 0
    return 1e3 * mean, 1e3 * (mean - half), 1e3 * (mean + half)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def judge_level(level: Level, positions: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    errors: list[float] = []
    times: list[float] = []
    for number, entry in enumerate(positions):
        snapshot = entry["snapshot"]
        plays = [tuple(tuple(s) for s in p) for p in snapshot["legal_plays"]]
        rng = random.Random(seed * 1_000_003 + number)
        started = time.perf_counter()
        decision = decide(level, snapshot, entry["side"], rng)
        times.append(time.perf_counter() - started)
        assert decision is not None and decision.play is not None
        values = entry["gnubg"]
        errors.append(max(values) - values[plays.index(decision.play)])
    mean, low, high = interval(errors)
    return {"level": str(level), "positions": len(errors), "memg": round(mean, 2),
            "low": round(low, 2), "high": round(high, 2), "words": rated_words(mean),
            "median_ms": round(1e3 * statistics.median(times), 2),
            "p99_ms": round(1e3 * percentile(times, 0.99), 2)}


def review_agreement(positions: list[dict[str, Any]], depth: int) -> dict[str, Any]:
    """The review's error of a play in each position against gnubg's error of the same
    play: the play is the evaluator's at 0 ply with :data:`REVIEW_NOISE` (seeded per
    position), so the plays reviewed have errors of every size."""
    from server.bot.review import Turn, review
    from server.rules import Position, Side, Step

    net = default_net()
    ours: list[float] = []
    theirs: list[float] = []
    spent = 0.0
    for number, entry in enumerate(positions):
        snapshot = entry["snapshot"]
        side = Side(entry["side"])
        plays = snapshot["legal_plays"]
        mine, other = sides_from_board(snapshot["board"], snapshot["bar"], snapshot["off"],
                                       int(side))
        a, b = plays_as_states(mine, other, plays)
        noisy = equity(evaluate_batch(net, a, b)) + np.random.default_rng(number).normal(
            0.0, REVIEW_NOISE, len(plays))
        played = int(np.argmax(noisy))
        position = Position(tuple(int(n) for n in snapshot["board"]),
                            (int(snapshot["bar"][0]), int(snapshot["bar"][1])),
                            (int(snapshot["off"][0]), int(snapshot["off"][1])), side)
        after = position.apply(tuple(Step(int(s), int(t)) for s, t in plays[played]),
                               pass_turn=False)
        dice = (int(snapshot["dice"][0]), int(snapshot["dice"][1]))
        started = time.process_time()
        decided = review([Turn("play", side, position, dice, after)],
                         depth=depth)["decisions"][0]
        spent += time.process_time() - started
        values = entry["gnubg"]
        ours.append(float(decided["error"]))
        theirs.append(max(values) - values[played])
    both = sum(1 for a, b in zip(ours, theirs, strict=True) if a > 0.001 and b > 0.001)
    either = sum(1 for a, b in zip(ours, theirs, strict=True) if a > 0.001 or b > 0.001)
    return {"plays": len(ours), "games": len({e["game"] for e in positions}), "depth": depth,
            "correlation": round(statistics.correlation(ours, theirs), 3),
            "mean_review_memg": round(1e3 * statistics.fmean(ours), 2),
            "mean_gnubg_memg": round(1e3 * statistics.fmean(theirs), 2),
            "mean_difference_memg": round(1e3 * statistics.fmean(
                [a - b for a, b in zip(ours, theirs, strict=True)]), 2),
            "errors_agreed": round(both / either, 3) if either else 1.0,
            "cpu_ms_per_play": round(1e3 * spent / len(ours), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--levels", default="", help="comma-separated level names")
    parser.add_argument("--review", action="store_true", help="the review's agreement")
    parser.add_argument("--review-depth", type=int, default=2, help="the review's search")
    parser.add_argument("--limit", type=int, default=0, help="judge the first N positions")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/table42-ladder"))
    args = parser.parse_args(argv)
    from server.bot.neural import default_net

    default_net()
    positions = judged_positions(args.games, args.seed, args.cache)
    if args.limit:
        positions = positions[:args.limit]
    print(json.dumps({"games": args.games, "seed": args.seed, "positions": len(positions)}),
          flush=True)
    for name in [n.strip() for n in args.levels.split(",") if n.strip()]:
        print(json.dumps(judge_level(Level(name), positions, args.seed)), flush=True)
    if args.review:
        print(json.dumps({"review": review_agreement(positions, args.review_depth)}),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

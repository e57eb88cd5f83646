"""Fit and check the cube model of :mod:`server.bot.cube` on cached gnubg judgements.

``collect`` plays the decision points of :mod:`bench.cube_judge` (same self-play, same
cube states, same seeds) and stores, per point, the evaluator's cubeless on-roll outputs
(:func:`server.bot.expert.on_roll_outputs`, with and without its search), both sides'
checkers and whether the position is a race, and per
cube state gnubg 0-ply's cubeful ``[ND, DT, DP, scale]``::

    nice -n 10 python3 bench/cube_fit.py collect --seed 1 --positions 4000 --out /tmp/c1.npz

``score`` replays :func:`bench.cube_judge.judge_level`'s accounting on a cache with the
current model (no gnubg, no network: instant), so constants can be fitted on one seed and
reported on another::

    python3 bench/cube_fit.py score /tmp/c2.npz

gnubg only judges; nothing of it goes into the product.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cube_judge import CLOSE, Tally, cases_for, judged, self_play  # noqa: E402
from bench.gnubg_judge import JudgePool  # noqa: E402
from server.bot.cube import CubeState, MatchContext, should_double, should_take  # noqa: E402
from server.bot.evaluation import Checkers, sides_from_board  # noqa: E402
from server.bot.neural import Array, flip  # noqa: E402
from server.bot.strategy import Level  # noqa: E402


def back_checker(side: Checkers) -> int:
    """The point of ``side``'s rearmost checker (25: on the bar; 0: all borne off)."""
    for point in range(25, 0, -1):
        if side[point]:
            return point
    return 0


def is_contact(a: Checkers, b: Checkers) -> bool:
    """Whether a checker of one side still has to pass one of the other's."""
    return back_checker(a) + back_checker(b) > 25


def collect(args: argparse.Namespace) -> None:
    from server.bot.expert import on_roll_outputs
    from server.bot.neural import default_net

    default_net()
    rng = random.Random(args.seed)
    judge = JudgePool(args.judges)
    try:
        started = time.perf_counter()
        points, games = self_play(args.positions, Level(args.source), args.keep, rng, judge)
        cases = cases_for(len(points), args.match_states, random.Random(args.seed + 10_000))
        equities = judged(points, cases, judge)
    finally:
        judge.close()
    outs, flat, race, sides = [], [], [], []
    for p in points:
        g = p.game
        mine, theirs = sides_from_board(g["board"], g["bar"], g["off"], p.side)
        outs.append(on_roll_outputs(mine, theirs))
        flat.append(on_roll_outputs(mine, theirs, search=False))
        race.append(not is_contact(mine, theirs))
        sides.append([list(mine), list(theirs)])
    np.savez(args.out, outputs=np.array(outs), flat=np.array(flat), race=np.array(race),
             sides=np.array(sides),
             point=np.array([c.point for c in cases]), cube=np.array([c.cube for c in cases]),
             owned=np.array([c.owned for c in cases]),
             length=np.array([c.length for c in cases]),
             score=np.array([c.score for c in cases]), equities=np.array(equities))
    print(json.dumps({"positions": len(points), "games": games, "cases": len(cases),
                      "seconds": round(time.perf_counter() - started, 1)}), file=sys.stderr)


Cache = dict[str, Any]


def load(path: str) -> Cache:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def states(cache: Cache) -> list[CubeState]:
    out = []
    for cube, owned, length, score in zip(cache["cube"], cache["owned"], cache["length"],
                                          cache["score"], strict=True):
        match = (MatchContext(int(length), int(length - score[0]), int(length - score[1]))
                 if length else None)
        out.append(CubeState(int(cube), bool(owned), match))
    return out


def score(cache: Cache, doubles: Callable[[Array, CubeState], bool] = should_double,
          takes: Callable[[Array, CubeState], bool] = should_take,
          only: Sequence[bool] | None = None) -> dict[str, Any]:
    """judge_level's accounting of the model on the cache (``only``: a mask of cases)."""
    tallies = {(k, r): Tally([], []) for k in ("money", "match") for r in ("doubler", "taker")}
    outputs = cache["outputs"]
    for n, state in enumerate(states(cache)):
        if only is not None and not only[n]:
            continue
        no_double, take, drop, scale = (float(x) for x in cache["equities"][n])
        out = outputs[cache["point"][n]]
        kind = "money" if state.match is None else "match"
        doubled_value = min(take, drop)
        best = max(no_double, doubled_value)
        d = bool(doubles(out, state))
        if d or best - doubled_value < CLOSE:
            tallies[kind, "doubler"].add(best - (doubled_value if d else no_double), scale)
        if doubled_value > no_double:
            t = bool(takes(flip(out), state))
            tallies[kind, "taker"].add(abs(take - drop) if t != (take <= drop) else 0.0,
                                       scale)
    result: dict[str, Any] = {}
    for kind in ("money", "match"):
        doubler, taker = tallies[kind, "doubler"], tallies[kind, "taker"]
        both = Tally(doubler.errors + taker.errors, doubler.costs + taker.costs,
                     doubler.wrong + taker.wrong)
        result[kind] = {role: tally.summary(kind == "match") for role, tally in
                        (("doubler", doubler), ("taker", taker), ("all", both))}
    return result


def fit(cache: Cache, params: Sequence[str], kind: str, rounds: int) -> dict[str, Any]:
    """Coordinate search of the named constants of :mod:`server.bot.cube` minimising the
    mean error (mEMG, doubler and taker together) of ``kind`` decisions on ``cache``."""
    from server.bot import cube

    mask = [(length == 0) == (kind == "money") for length in cache["length"]]
    grids = {}
    for spec in params:
        name, rng = spec.split("=")
        low, high, step = (float(v) for v in rng.split(":"))
        grids[name] = np.arange(low, high + step / 2, step)

    def loss() -> float:
        cube.match_table.cache_clear()
        memg = score(cache, only=mask)[kind]["all"]["memg"]
        return float(memg)

    best = loss()
    trace = [{"start": best}]
    for _ in range(rounds):
        for name, grid in grids.items():
            keep = getattr(cube, name)
            for value in grid:
                setattr(cube, name, float(value))
                value_loss = loss()
                if value_loss < best:
                    best, keep = value_loss, float(value)
            setattr(cube, name, keep)
            trace.append({name: round(keep, 4), "memg": best})
            print(json.dumps(trace[-1]), file=sys.stderr, flush=True)
    return {"best": best, "constants": {n: getattr(cube, n) for n in grids},
            "trace": trace}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--positions", type=int, default=4000)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--source", default=str(Level.INTERMEDIATE))
    c.add_argument("--keep", type=float, default=0.25)
    c.add_argument("--match-states", type=int, default=2)
    c.add_argument("--judges", type=int, default=6)
    c.add_argument("--out", required=True)
    s = sub.add_parser("score")
    s.add_argument("cache")
    s.add_argument("--flat", action="store_true", help="the outputs without the search")
    f = sub.add_parser("fit")
    f.add_argument("cache")
    f.add_argument("--flat", action="store_true", help="the outputs without the search")
    f.add_argument("--param", action="append", default=[],
                   help="NAME=low:high:step, a constant of server.bot.cube (repeatable)")
    f.add_argument("--kind", choices=("money", "match"), default="money")
    f.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(args)
        return 0
    cache = load(args.cache)
    if args.flat:
        cache["outputs"] = cache["flat"]
    if args.command == "score":
        print(json.dumps(score(cache), indent=1))
    else:
        print(json.dumps(fit(cache, args.param, args.kind, args.rounds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Cube decisions of the computer levels, judged by GNU Backgammon 0-ply (cubeful).

Run from the repository root (gnubg judges only; it never runs in the product)::

    nice -n 10 python3 bench/cube_judge.py --levels advanced,beginner --positions 600 --seed 1

Decision points: the positions before a roll met in seeded cubeless self-play games of
``--source`` (``intermediate``, the evaluator at 0 ply, against itself), each kept with
chance ``--keep``, up to the game's first money cash (gnubg: double/drop with the cube
centred; a cubeful game between sound players ends there; ``--whole-games`` keeps the rest
too). Each is a cube decision of the side on roll under several cube states: money play
with the cube centred (1) and owned by the side on roll (2); and ``--match-states`` match
states, 5- and 7-point matches alternately, at a score drawn with the seeded rng (never
the Crawford game; a side at length - 1 means post-Crawford), the cube centred or owned at
2, drawn again while the cube cannot matter (double match point, or the cube already worth
the match to both). gnubg gives the 0-ply cubeful equities of no double (ND), double/take
(DT) and double/drop (DP) per unit of the current cube (in a match its normalised equity:
MWC mapped linearly so that winning/losing the cube's points is +1/-1).

Each level answers through :func:`server.bot.strategy.decide` with a snapshot shaped like
the protocol's ``state.game`` (phase ``roll`` with ``can_double``; phase
``double_offered`` for the taker):

- doubler: error = max(ND, min(DT, DP)) - (min(DT, DP) if it doubles else ND). Counted, as
  gnubg counts its cube decisions, when it doubles or when the double is close: no double
  with max(ND, min(DT, DP)) - min(DT, DP) < ``CLOSE`` (0.16, gnubg's own margin).
- taker: asked wherever gnubg 0-ply doubles (min(DT, DP) > ND), whatever the level itself
  would do; error |DT - DP| when its take or drop differs from gnubg's (take when
  DT <= DP). Every one counts.

Reported per level, money and match apart, doubler and taker apart: the decisions, the
share of them wrong, and mEMG (thousandths of normalised equity per unit cube) per decision
with a 95% interval (mean +- 1.96 sd / sqrt(n)); match play also in thousandths of
match-winning chance (the normalised error times eq2mwc(1) - eq2mwc(0), as gnubg converts
its errors). Each gnubg evaluation waits about 10 ms with little CPU: ``--judges`` gnubg
processes share every batch.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bots import SeededDice, unforced_turns  # noqa: E402
from bench.gnubg_judge import CubeItem, JudgePool  # noqa: E402
from server.bot.evaluation import sides_from_board  # noqa: E402
from server.bot.strategy import Level, decide  # noqa: E402
from server.rules import Game, Side  # noqa: E402
from server.rules.gnubg import MatchState, encode_match_state  # noqa: E402

CLOSE = 0.16
"""gnubg's margin for a close cube decision (isCloseCubedecision): a no double counts when
doubling is less than this much worse than the best action."""
LENGTHS = (5, 7)
BATCH = 3000
"""Cube decisions per batch (shared out among the judges)."""
ROUND = 10
"""Self-play games whose positions are judged together."""


@dataclass(frozen=True, slots=True)
class Point:
    """A position before a roll: the snapshot of the cubeless game and the side on roll."""

    game: dict[str, Any]
    side: int


@dataclass(frozen=True, slots=True)
class Case:
    """A decision point under one cube state; ``score`` is ``(roller's, other's)``."""

    point: int
    cube: int
    owned: bool
    length: int
    score: tuple[int, int]

    @property
    def match(self) -> bool:
        return self.length > 0


def play_one(source: Level, keep: float, rng: random.Random) -> list[tuple[Point, bool]]:
    """The positions before a roll of one cubeless game of ``source`` against itself, each
    with whether it is kept (chance ``keep``)."""
    game = Game(dice=SeededDice(rng), cube_enabled=False)
    game.start()
    seen: list[tuple[Point, bool]] = []

    def before_roll(snapshot: dict[str, Any], side: int) -> None:
        seen.append((Point(snapshot, side), rng.random() < keep))

    for snapshot, side, _plays in unforced_turns(game, before_roll):
        decision = decide(source, snapshot, side, rng)
        assert decision is not None and decision.play is not None
        game.play(side, [list(s) for s in decision.play])
    return seen


def self_play(count: int, source: Level, keep: float, rng: random.Random,
              judge: JudgePool | None) -> tuple[list[Point], int]:
    """``count`` positions before a roll from seeded cubeless games of ``source`` against
    itself; returns them and the games played. With a ``judge``, a game's positions after
    its first money cash (gnubg 0-ply, cube centred: double/drop is the best action) are
    left out: a cubeful game would have ended there. Games are played ``ROUND`` at a time
    and judged together."""
    points: list[Point] = []
    games = 0
    while len(points) < count:
        pending = [play_one(source, keep, rng) for _ in range(ROUND)]
        games += ROUND
        if judge is not None:
            flat = [p for seen in pending for p, _ in seen]
            money = [Case(n, 1, False, 0, (0, 0)) for n in range(len(flat))]
            equities = judged(flat, money, judge)
            at = 0
            for seen in pending:
                mine = equities[at:at + len(seen)]
                at += len(seen)
                cash = [n for n, (no_double, take, drop, _scale) in enumerate(mine)
                        if take > drop >= no_double]
                if cash:
                    del seen[cash[0] + 1:]
        for seen in pending:
            points.extend(p for p, kept in seen if kept)
    return points[:count], games


def match_case(point: int, length: int, rng: random.Random) -> Case:
    """A match state where a double is legal and can matter, drawn with ``rng``."""
    while True:
        mine, theirs = rng.randrange(length), rng.randrange(length)
        owned = rng.random() < 0.5
        cube = 2 if owned else 1
        leader = length - 1
        if (mine == leader) != (theirs == leader) and 0 in (mine, theirs):
            continue  # one side at length - 1, the other at 0: the Crawford game
        if cube >= max(length - mine, length - theirs):
            continue  # the game decides the match whatever the cube does
        return Case(point, cube, owned, length, (mine, theirs))


def cases_for(count: int, match_states: int, rng: random.Random) -> list[Case]:
    cases: list[Case] = []
    for point in range(count):
        cases.append(Case(point, 1, False, 0, (0, 0)))
        cases.append(Case(point, 2, True, 0, (0, 0)))
        for n in range(match_states):
            cases.append(match_case(point, LENGTHS[n % len(LENGTHS)], rng))
    return cases


def snapshot_for(point: Point, case: Case, *, offered: bool) -> dict[str, Any]:
    """The protocol-shaped snapshot of ``case``: the roller on roll (``offered`` False) or
    its opponent facing its double (``offered`` True)."""
    side = point.side
    score = [0, 0]
    score[side], score[1 - side] = case.score
    to_act = 1 - side if offered else side
    owner = side if case.owned else None
    state = MatchState(
        cube=case.cube, cube_owner=None if owner is None else Side(owner), on_roll=Side(side),
        crawford=False, game_state="playing", to_act=Side(to_act), double_offered=offered,
        resignation=None, dice=None, match_length=case.length, score=(score[0], score[1]),
    )
    return {**point.game, "phase": "double_offered" if offered else "roll",
            "turn": side, "to_act": to_act, "dice": None, "legal_plays": [],
            "cube": case.cube, "cube_owner": owner, "cube_enabled": True, "crawford": False,
            "can_double": not offered, "match_id": encode_match_state(state)}


def judged(points: Sequence[Point], cases: Sequence[Case], judge: JudgePool
           ) -> list[list[float]]:
    items = []
    for case in cases:
        point = points[case.point]
        game = point.game
        mine, theirs = sides_from_board(game["board"], game["bar"], game["off"], point.side)
        items.append(CubeItem(mine, theirs, case.cube, case.owned, case.length, case.score))
    out: list[list[float]] = []
    for at in range(0, len(items), BATCH):
        out.extend(judge.cube_equities(items[at:at + BATCH]))
    return out


@dataclass(slots=True)
class Tally:
    """Errors (normalised equity) and their cost (points or MWC) of counted decisions."""

    errors: list[float]
    costs: list[float]
    wrong: int = 0

    def add(self, error: float, scale: float) -> None:
        error = max(0.0, error)
        self.errors.append(error)
        self.costs.append(error * scale)
        self.wrong += error > 0.0

    def summary(self, match: bool) -> dict[str, Any]:
        n = len(self.errors)
        out: dict[str, Any] = {"decisions": n, "wrong": self.wrong,
                               "wrong_share": round(self.wrong / n, 3) if n else None}
        out.update(interval("memg", self.errors))
        if match:
            out.update(interval("mmwc", self.costs))
        return out


def interval(name: str, values: Sequence[float]) -> dict[str, Any]:
    n = len(values)
    if not n:
        return {name: None}
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = 1.96 * sd / math.sqrt(n)
    return {name: round(1e3 * mean, 1), f"{name}_low": round(1e3 * (mean - half), 1),
            f"{name}_high": round(1e3 * (mean + half), 1)}


def judge_level(level: Level, points: Sequence[Point], cases: Sequence[Case],
                equities: Sequence[Sequence[float]], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tallies = {(kind, role): Tally([], []) for kind in ("money", "match")
               for role in ("doubler", "taker")}
    counts = {kind: {"states": 0, "doubles": 0, "missed_doubles": 0, "wrong_doubles": 0,
                     "takes": 0, "drops": 0, "wrong_takes": 0, "wrong_drops": 0}
              for kind in ("money", "match")}
    started = time.perf_counter()
    for case, (no_double, take, drop, scale) in zip(cases, equities, strict=True):
        point = points[case.point]
        kind = "match" if case.match else "money"
        count = counts[kind]
        count["states"] += 1
        doubled_value = min(take, drop)
        best = max(no_double, doubled_value)
        answer = decide(level, snapshot_for(point, case, offered=False), point.side, rng)
        assert answer is not None and answer.kind in ("double", "roll")
        doubles = answer.kind == "double"
        if doubles or best - doubled_value < CLOSE:
            error = best - (doubled_value if doubles else no_double)
            tallies[kind, "doubler"].add(error, scale)
            count["doubles"] += doubles
            count["wrong_doubles"] += doubles and error > 0.0
            count["missed_doubles"] += not doubles and error > 0.0
        if doubled_value > no_double:  # gnubg doubles: the level takes or drops
            reply = decide(level, snapshot_for(point, case, offered=True), 1 - point.side,
                           rng)
            assert reply is not None and reply.kind in ("take", "drop")
            takes = reply.kind == "take"
            right = take <= drop  # the take leaves the doubler less than the drop
            tallies[kind, "taker"].add(abs(take - drop) if takes != right else 0.0, scale)
            count["takes" if takes else "drops"] += 1
            count["wrong_takes"] += takes and not right
            count["wrong_drops"] += not takes and right
    result: dict[str, Any] = {"level": str(level),
                              "decide_seconds": round(time.perf_counter() - started, 1)}
    for kind in ("money", "match"):
        doubler, taker = tallies[kind, "doubler"], tallies[kind, "taker"]
        both = Tally(doubler.errors + taker.errors, doubler.costs + taker.costs,
                     doubler.wrong + taker.wrong)
        result[kind] = {**counts[kind], "doubler": doubler.summary(kind == "match"),
                        "taker": taker.summary(kind == "match"),
                        "all": both.summary(kind == "match")}
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    from server.bot.neural import default_net

    names = [n.strip() for n in args.levels.split(",") if n.strip()]
    levels = [Level(n) for n in names]
    default_net()
    rng = random.Random(args.seed)
    judge = JudgePool(args.judges)
    try:
        started = time.perf_counter()
        points, games = self_play(args.positions, Level(args.source), args.keep, rng,
                                  None if args.whole_games else judge)
        play_seconds = time.perf_counter() - started
        cases = cases_for(len(points), args.match_states, random.Random(args.seed + 10_000))
        started = time.perf_counter()
        equities = judged(points, cases, judge)
        judge_seconds = time.perf_counter() - started
    finally:
        judge.close()
    results = []
    for n, level in enumerate(levels):
        results.append(judge_level(level, points, cases, equities, args.seed * 1000 + n))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    return {"positions": len(points), "games": games, "source": args.source,
            "until_cash": not args.whole_games,
            "cube_states": len(cases), "close_margin": CLOSE,
            "self_play_seconds": round(play_seconds, 1),
            "gnubg_seconds": round(judge_seconds, 1), "levels": results}


def table(result: dict[str, Any]) -> str:
    lines = [f"{result['positions']} positions ({result['games']} games of "
             f"{result['source']}), {result['cube_states']} cube states",
             "level   kind   role     decisions  wrong   mEMG (95%)           mMWC (95%)"]
    for level in result["levels"]:
        for kind in ("money", "match"):
            for role in ("doubler", "taker", "all"):
                s = level[kind][role]
                memg = (f"{s['memg']:6.1f} ({s['memg_low']:.1f}..{s['memg_high']:.1f})"
                        if s["memg"] is not None else "-")
                mmwc = (f"{s['mmwc']:6.1f} ({s['mmwc_low']:.1f}..{s['mmwc_high']:.1f})"
                        if s.get("mmwc") is not None else "")
                share = f"{s['wrong_share']:.1%}" if s["wrong_share"] is not None else "-"
                lines.append(f"{level['level']:12} {kind:6} {role:8} {s['decisions']:9}  "
                             f"{share:6}  {memg:20} {mmwc}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="advanced",
                        help=f"comma-separated levels ({', '.join(str(x) for x in Level)})")
    parser.add_argument("--positions", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--source", default=str(Level.INTERMEDIATE),
                        help="the level whose self-play gives the positions")
    parser.add_argument("--keep", type=float, default=0.25,
                        help="chance that a position before a roll is kept")
    parser.add_argument("--match-states", type=int, default=2,
                        help="match states per position (5- and 7-point alternately)")
    parser.add_argument("--whole-games", action="store_true",
                        help="keep the positions after a game's first money cash too")
    parser.add_argument("--judges", type=int, default=6,
                        help="gnubg processes sharing each batch (they mostly wait)")
    parser.add_argument("--json", action="store_true", help="print JSON, not a table")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

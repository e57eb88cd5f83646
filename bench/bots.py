"""Computer players: strength and speed with the pure engine, and a node hosting bot games.

Run from the repository root (after ``python3 -m pip install -e .``)::

    python3 bench/bots.py strength --games 1000 --casual-games 300     # minutes
    python3 bench/bots.py node --bot-games 100 --duration 20           # needs Redis

``strength``: whole cubeless games with the rules engine, no sockets. ``beginner`` against
``random`` and ``casual`` against ``beginner``, sides alternating, fresh random dice; prints the
win rate with its 95% interval (Wilson) and each level's time per checker-play choice
(median, p90, p99, max; only choices among two or more plays count).

``levels``: every level against every other and against GNU Backgammon 0-ply (cubeless
games, sides alternating, seeded dice), and each level's error rate judged by GNU
Backgammon 0-ply (``bench/gnubg_judge.py``: gnubg plays and judges, it never runs in the
product)::

    nice -n 10 python3 bench/bots.py levels --games 100 --gnubg-games 200

prints, per pairing, the first level's win rate with its 95% interval and its points per
game (single 1, gammon 2, backgammon 3), and per level its mean equity lost per unforced
checker play against gnubg 0-ply's best (mEMG, cubeless) and its decision times.

``review``: the time to review games of 300 checker plays (``server.bot.review``)::

    nice -n 10 python3 bench/bots.py review --moves 300 --repeat 5

``node``: starts a server (``python -m server``, Redis from ``--redis-url`` with a fresh
key prefix deleted afterwards), opens ``--bot-games`` games against the server's computer
(``play_computer``, level ``--level``) whose scripted humans think ``--think`` seconds per
decision, and, meanwhile, plays ``--human-games`` human-against-human games flat out,
measuring each move's round trip (a ``roll`` or ``play`` sent until its event is back).
Everything stops by itself after ``--duration`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.bot.strategy import Level, decide  # noqa: E402
from server.rules import Game, SecretDice  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]


def wilson(wins: int, games: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a win rate."""
    if games == 0:
        return (0.0, 1.0)
    p = wins / games
    centre = (p + z * z / (2 * games)) / (1 + z * z / games)
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / (1 + z * z / games)
    return centre - half, centre + half


def play_game(levels: tuple[Level, Level], rng: random.Random,
              times: dict[Level, list[float]]) -> int:
    """One cubeless game; returns the winning side."""
    game = Game(dice=SecretDice(), cube_enabled=False)
    game.start()
    for _ in range(5000):
        if game.is_over:
            break
        snapshot: dict[str, Any] = game.to_dict()
        side = int(snapshot["to_act"])
        level = levels[side]
        started = time.perf_counter()
        decision = decide(level, snapshot, side, rng)
        spent = time.perf_counter() - started
        assert decision is not None
        if decision.kind == "roll":
            game.roll(side)
        else:
            assert decision.kind == "play" and decision.play is not None
            if len(snapshot["legal_plays"]) > 1:
                times[level].append(spent)
            game.play(side, [list(s) for s in decision.play])
    assert game.outcome is not None
    return int(game.outcome.winner)


def match_up(stronger: Level, weaker: Level, games: int, seed: int,
             times: dict[Level, list[float]]) -> dict[str, Any]:
    rng = random.Random(seed)
    wins = 0
    started = time.monotonic()
    for n in range(games):
        levels = (stronger, weaker) if n % 2 == 0 else (weaker, stronger)
        winner = play_game(levels, rng, times)
        wins += levels[winner] is stronger
    low, high = wilson(wins, games)
    return {"pair": f"{stronger} vs {weaker}", "games": games, "wins": wins,
            "rate": wins / games, "low": low, "high": high,
            "seconds": time.monotonic() - started}


def strength(args: argparse.Namespace) -> dict[str, Any]:
    times: dict[Level, list[float]] = {level: [] for level in Level}
    results = [match_up(Level.BEGINNER, Level.RANDOM, args.games, args.seed, times)]
    if args.casual_games:
        results.append(match_up(Level.CASUAL, Level.BEGINNER, args.casual_games, args.seed + 1,
                                times))
    choice = {
        str(level): {"choices": len(v), "median_ms": 1e3 * percentile(v, 0.5),
                     "p90_ms": 1e3 * percentile(v, 0.9), "p99_ms": 1e3 * percentile(v, 0.99),
                     "max_ms": 1e3 * max(v)}
        for level, v in times.items() if v
    }
    return {"matches": results, "choice_time": choice}


# --- every level against every other, and against GNU Backgammon -----------------------------

GNUBG = "gnubg"


class SeededDice:
    """Dice from a seeded ``random.Random`` (reproducible benchmark games)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def roll_die(self) -> int:
        return self.rng.randint(1, 6)


def unforced_turns(game: Game, on_roll: Callable[[dict[str, Any], int], None] | None = None
                   ) -> Iterator[tuple[dict[str, Any], int, list[Any]]]:
    """The checker plays of a cubeless ``game`` with two or more offered plays, as it is
    played: the rolls and the forced plays are made here, each yielded turn (its snapshot,
    the side to play, the offered plays) is played by the caller before the next.
    ``on_roll`` sees each position before a roll (its snapshot, the side to roll) first."""
    while not game.is_over:
        snapshot: dict[str, Any] = game.to_dict()
        side = int(snapshot["to_act"])
        if snapshot["phase"] == "roll":
            if on_roll is not None:
                on_roll(snapshot, side)
            game.roll(side)
            continue
        plays = snapshot["legal_plays"]
        if len(plays) <= 1:
            game.play(side, [list(s) for s in plays[0]] if plays else [])
            continue
        yield snapshot, side, plays


class LevelBench:
    """Plays cubeless games between levels (and gnubg), judging every unforced play of a
    level by gnubg 0-ply when a judge is given."""

    def __init__(self, judge: Any | None) -> None:
        self.judge = judge
        self.errors: dict[str, list[float]] = {}
        self.times: dict[str, list[float]] = {}

    def _gnubg_play(self, mine: list[int], theirs: list[int], dice: tuple[int, int],
                    plays: list[Any]) -> int:
        from server.bot.evaluation import after_play

        assert self.judge is not None
        steps = self.judge.best_move(mine, theirs, dice)
        try:
            target = after_play(mine, theirs, steps)
        except ValueError:
            target = None
        for index, play in enumerate(plays):
            if after_play(mine, theirs, play) == target:
                return index
        # not one of the offered plays (should not happen): evaluate them all
        outs = self.judge.evaluate_after([after_play(mine, theirs, p) for p in plays])
        return max(range(len(plays)), key=lambda i: outs[i][5])

    def _judge(self, name: str, mine: list[int], theirs: list[int], dice: tuple[int, int],
               plays: list[Any], chosen: int) -> None:
        from server.bot.evaluation import after_play

        if self.judge is None:
            return
        best = self._gnubg_play(mine, theirs, dice, plays)
        if best == chosen:
            self.errors.setdefault(name, []).append(0.0)
            return
        outs = self.judge.evaluate_after([after_play(mine, theirs, plays[best]),
                                          after_play(mine, theirs, plays[chosen])])
        self.errors.setdefault(name, []).append(max(0.0, outs[0][5] - outs[1][5]))

    def play_game(self, names: tuple[str, str], rng: random.Random) -> tuple[int, int]:
        """One cubeless game; returns (winning side, points)."""
        from server.bot.evaluation import sides_from_board

        game = Game(dice=SeededDice(rng), cube_enabled=False)
        game.start()
        for snapshot, side, plays in unforced_turns(game):
            name = names[side]
            mine, theirs = sides_from_board(snapshot["board"], snapshot["bar"],
                                            snapshot["off"], side)
            dice = (int(snapshot["dice"][0]), int(snapshot["dice"][1]))
            started = time.perf_counter()
            if name == GNUBG:
                index = self._gnubg_play(mine, theirs, dice, plays)
            else:
                decision = decide(Level(name), snapshot, side, rng)
                assert decision is not None and decision.play is not None
                index = [tuple(map(tuple, p)) for p in plays].index(decision.play)
                self.times.setdefault(name, []).append(time.perf_counter() - started)
                self._judge(name, mine, theirs, dice, plays, index)
            game.play(side, [list(s) for s in plays[index]])
        assert game.outcome is not None
        return int(game.outcome.winner), int(game.outcome.points)

    def match_up(self, first: str, second: str, games: int, seed: int) -> dict[str, Any]:
        rng = random.Random(seed)
        wins = points = 0
        started = time.monotonic()
        for n in range(games):
            names = (first, second) if n % 2 == 0 else (second, first)
            winner, won = self.play_game(names, rng)
            mine = names[winner] == first
            wins += mine
            points += won if mine else -won
            if (n + 1) % 10 == 0:  # progress, in case the run must be cut short
                errors = {k: (len(v), round(1e3 * sum(v) / len(v), 1))
                          for k, v in self.errors.items() if v}
                print(json.dumps({"pair": f"{first} vs {second}", "games": n + 1,
                                  "wins": wins, "points": points, "judged": errors}),
                      file=sys.stderr, flush=True)
        low, high = wilson(wins, games)
        return {"pair": f"{first} vs {second}", "games": games, "wins": wins,
                "rate": round(wins / games, 3), "low": round(low, 3), "high": round(high, 3),
                "ppg": round(points / games, 3),
                "seconds": round(time.monotonic() - started, 1)}


def levels(args: argparse.Namespace) -> dict[str, Any]:
    from bench.gnubg_judge import Judge
    from server.bot.neural import default_net

    judge = Judge() if args.gnubg_games else None
    bench = LevelBench(judge)
    names = [n.strip() for n in args.levels.split(",") if n.strip()]
    default_net()  # loaded once before any decision is timed
    results = []
    try:
        seed = args.seed
        focus = args.focus
        if judge is not None:
            for name in names:
                seed += 1
                if focus and name != focus:
                    continue
                results.append(bench.match_up(name, GNUBG, args.gnubg_games, seed))
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                seed += 1
                if (focus and focus not in (first, second)) or not args.games:
                    continue
                results.append(bench.match_up(first, second, args.games, seed))
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    finally:
        if judge is not None:
            judge.close()
    per_level = {
        name: {
            "judged_plays": len(bench.errors.get(name, [])),
            "memg_per_move": round(1e3 * sum(bench.errors[name]) / len(bench.errors[name]), 1)
            if bench.errors.get(name) else None,
            "median_ms": round(1e3 * percentile(bench.times[name], 0.5), 2),
            "p99_ms": round(1e3 * percentile(bench.times[name], 0.99), 2),
        }
        for name in names if bench.times.get(name)
    }
    return {"matches": results, "levels": per_level}


# --- the review of a long game ------------------------------------------------------------------


def review_time(args: argparse.Namespace) -> dict[str, Any]:
    """Times :func:`server.bot.review.review` on ``--moves`` checker plays of whole games
    (``beginner`` against ``beginner``, cubeless; as many games as it takes), after one warm-up
    review."""
    from server.bot.neural import default_net
    from server.bot.review import review, turns_from_mat
    from server.rules.mat import export_mat, import_mat

    rng = random.Random(args.seed)
    default_net()
    spent: list[float] = []
    cpu_spent: list[float] = []
    for _ in range(args.repeat + 1):
        turns: list[Any] = []
        while sum(1 for t in turns if t.kind == "play") < args.moves:
            game = Game(dice=SeededDice(rng), cube_enabled=False)
            game.start()
            while not game.is_over:
                snapshot: dict[str, Any] = game.to_dict()
                side = int(snapshot["to_act"])
                decision = decide(Level.BEGINNER, snapshot, side, rng)
                assert decision is not None
                if decision.kind == "roll":
                    game.roll(side)
                else:
                    assert decision.play is not None
                    game.play(side, [list(s) for s in decision.play])
            turns.extend(t for t in turns_from_mat(import_mat(export_mat(game))[0])
                         if t.kind == "play")
        turns = turns[:args.moves]
        started, cpu = time.perf_counter(), time.process_time()
        review(turns)
        spent.append(time.perf_counter() - started)
        cpu_spent.append(time.process_time() - cpu)
    spent, cpu_spent = spent[1:], cpu_spent[1:]  # the first one warms the caches up
    return {"moves": args.moves, "reviews": len(spent),
            "median_s": round(percentile(spent, 0.5), 3), "max_s": round(max(spent), 3),
            "cpu_median_s": round(percentile(cpu_spent, 0.5), 3)}


# --- a node hosting bot games --------------------------------------------------------------


async def delete_keys(url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    redis = aioredis.Redis.from_url(url)
    keys = [k async for k in redis.scan_iter(match=prefix + "*", count=1000)]
    for i in range(0, len(keys), 500):
        await redis.delete(*keys[i:i + 500])
    await redis.aclose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def node(args: argparse.Namespace) -> dict[str, Any]:
    from server.client import Client, RequestFailed, default_decision

    port = free_port()
    prefix = f"bench-bots-{secrets.token_hex(3)}:"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "server", "--port", str(port), "--redis-url", args.redis_url,
           "--key-prefix", prefix, "--scrypt-n", "2", "--rate-limit", "1000",
           "--rate-burst", "1000", "--decision-time", "600", "--bot-games-per-node",
           str(args.bot_games + 10), "--bot-games-per-player", "1000",
           # the node's load is measured, not its per-address limits (the human games
           # create a table per game, faster than table_create_rate allows)
           "--limits", "0", "--trusted-proxies", "127.0.0.1"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"ws://127.0.0.1:{port}/ws"
    round_trips: list[float] = []
    bot_moves = 0
    stop_at = 0.0
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), urllib.request.urlopen(
                f"http://127.0.0.1:{port}/healthz", timeout=1
            ):
                break
            await asyncio.sleep(0.1)
        addresses = iter(f"10.{n // 250}.{n % 250}.1" for n in range(1, 100_000))

        async def client() -> Client:
            return await Client.connect(url, guest=True, fmt="msgpack",
                                        headers={"X-Forwarded-For": next(addresses)},
                                        auto_reconnect=False)

        async def against_bot() -> None:
            nonlocal bot_moves
            human = await client()
            rng = random.Random()
            while time.monotonic() < stop_at:
                try:
                    table = await human.play_computer(args.level)
                except RequestFailed:
                    await asyncio.sleep(0.1)
                    continue
                acted = -1
                while time.monotonic() < stop_at:
                    try:
                        event = await human.next_event(2.0)
                    except TimeoutError:
                        continue
                    if event.raw.get("table") != table:
                        continue
                    if event.type == "game_over":
                        break
                    state = human.state(table)
                    view = human.tables[table]
                    if state and human.my_turn(table) and view.v > acted:
                        acted = view.v
                        await asyncio.sleep(args.think * rng.uniform(0.5, 1.5))
                        with contextlib.suppress(Exception):
                            await human.send({**default_decision(state["game"]),
                                              "table": table})
                            bot_moves += 1
            await human.close()

        async def human_game() -> None:
            a, b = await client(), await client()
            while time.monotonic() < stop_at:
                table = await a.create_table("private")
                await b.join(table)
                for _ in range(5000):
                    if time.monotonic() >= stop_at:
                        break
                    movers = [c for c in (a, b) if c.my_turn(table)]
                    if not movers:
                        state = a.state(table)
                        if state is not None and state["status"] != "playing":
                            break
                        await asyncio.sleep(0.001)
                        continue
                    mover = movers[0]
                    game = mover.state(table)["game"]  # type: ignore[index]
                    sent = time.perf_counter()
                    ack = await mover.act(table, default_decision(game))
                    round_trips.append(time.perf_counter() - sent)
                    for _ in range(1000):  # both have seen the event before the next move
                        if min(a.tables[table].v, b.tables[table].v) >= ack["v"]:
                            break
                        await asyncio.sleep(0.001)
                await asyncio.sleep(0.05)
            await a.close()
            await b.close()

        stop_at = time.monotonic() + args.warmup + args.duration
        bots = [asyncio.create_task(against_bot()) for _ in range(args.bot_games)]
        await asyncio.sleep(args.warmup)
        round_trips.clear()
        humans = [asyncio.create_task(human_game()) for _ in range(args.human_games)]
        for failed in await asyncio.gather(*humans, *bots, return_exceptions=True):
            if isinstance(failed, Exception):
                print(f"a client failed: {failed!r}", file=sys.stderr)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()  # the keys are deleted once nothing writes them any more
            proc.wait()
        await delete_keys(args.redis_url, prefix)
    return {"bot_games": args.bot_games, "level": args.level, "think": args.think,
            "human_moves": len(round_trips), "bot_side_human_moves": bot_moves,
            "rtt_median_ms": 1e3 * percentile(round_trips, 0.5) if round_trips else None,
            "rtt_p99_ms": 1e3 * percentile(round_trips, 0.99) if round_trips else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("strength")
    s.add_argument("--games", type=int, default=1000, help="beginner vs random games")
    s.add_argument("--casual-games", type=int, default=300, help="casual vs beginner games")
    s.add_argument("--seed", type=int, default=1)
    lv = sub.add_parser("levels")
    lv.add_argument("--levels", default="advanced,casual,beginner",
                    help="comma-separated levels (" + ", ".join(str(x) for x in Level) + ")")
    lv.add_argument("--games", type=int, default=100, help="games per pair of levels")
    lv.add_argument("--gnubg-games", type=int, default=200,
                    help="games of each level against gnubg 0-ply (0: no gnubg)")
    lv.add_argument("--seed", type=int, default=7)
    lv.add_argument("--focus", default="",
                    help="only the matches of this level (the others' figures kept from "
                    "an earlier run; seeds stay those of the full run)")
    rv = sub.add_parser("review")
    rv.add_argument("--moves", type=int, default=300, help="checker plays per review")
    rv.add_argument("--repeat", type=int, default=5)
    rv.add_argument("--seed", type=int, default=3)
    n = sub.add_parser("node")
    n.add_argument("--bot-games", type=int, default=100)
    n.add_argument("--human-games", type=int, default=4)
    n.add_argument("--level", choices=[str(x) for x in Level], default="beginner")
    n.add_argument("--think", type=float, default=1.0)
    n.add_argument("--duration", type=float, default=20.0)
    n.add_argument("--warmup", type=float, default=5.0)
    n.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args(argv)
    if args.what == "strength":
        result = strength(args)
    elif args.what == "levels":
        result = levels(args)
    elif args.what == "review":
        result = review_time(args)
    else:
        result = asyncio.run(node(args))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

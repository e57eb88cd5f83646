"""Redis bytes a finished game leaves behind, by what keeps them and for how long. Run by hand
from the repository root:

    PYTHONPATH=. python3 bench/record_bytes.py                  # an embedded redis-server
    PYTHONPATH=. python3 bench/record_bytes.py --games 40 --json

It runs against whatever ``server`` package it imports (``PYTHONPATH``), so the same file
measures an older checkout too. What one run does:

1. starts a node in this process (``create_app``, port 0, a fresh key prefix, the per-address
   limits off) on a throwaway embedded redis-server (or ``--redis-url``);
2. plays ``--games`` games of each kind between pairs of players, each game at a fresh
   competitive table, through the test helpers (``tests/server/server_helpers.py``):
   **resigned** (the second player resigns at its first decision: the cheapest game to
   finish), **played** (played out with the first legal play, scripted dice: a typical
   money game of about 110 events);
3. after each kind, sums ``MEMORY USAGE`` (``SAMPLES 0``) of every key under the prefix,
   grouped: the **record** (``{g:<id>}:served``), the players' **history** (``{p:<id>}:games``,
   ``:games:public``, ``:game_rows``), both kept ``game_record_ttl`` (90 days); the **table**'s
   keys (event log, snapshot, results, owner record: kept at most ``event_log_ttl``, 7 days);
   the rest (accounts, tokens, ratings: per player, not per game);
4. prints the mean bytes per finished game of each group (``--json``: one JSON object) and
   deletes every key under the prefix.

The history's keys are the players' and grow with each game, so their growth is measured
from the same players' keys before the games.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "tests" / "server"))

from server_helpers import (  # noqa: E402  (the test helpers play the games)
    Client,
    RunningServer,
    connect,
    play_out,
    register,
    resign_at_once,
    seat_two,
)

from bench.heavy_reads import settings_for, start_node  # noqa: E402  (its node, limits off)
from server.embedded_redis import EmbeddedRedis  # noqa: E402

Decide = Callable[[int, dict[str, Any]], "dict[str, Any] | None"]


KINDS: dict[str, Decide | None] = {"resigned": resign_at_once, "played": None}


def group(key: str, prefix: str) -> str:
    name = key[len(prefix):]
    if name.startswith("{g:"):
        return "record"
    if name.startswith("{p:") and (":games" in name or name.endswith(":game_rows")):
        return "history"
    if name.startswith("{t:") or name.startswith("{leases}") or name.startswith("{lobby}"):
        return "table"
    return "other"


async def usage(redis: aioredis.Redis, prefix: str) -> dict[str, int]:
    """``MEMORY USAGE`` summed per group over every key under ``prefix``."""
    totals: dict[str, int] = defaultdict(int)
    async for raw in redis.scan_iter(match=f"{prefix}*", count=1000):
        key = raw.decode()
        size = await redis.memory_usage(key, samples=0)
        totals[group(key, prefix)] += int(size or 0)
    return dict(totals)


async def play_games(node: RunningServer, pairs: list[tuple[Client, Client]],
                     decide: Decide | None) -> None:
    for a, b in pairs:
        table, _ = await seat_two(node, a, b)
        await play_out({0: a, 1: b}, table, decide=decide)
        for client in (a, b):
            await client.request({"type": "leave", "table": table})


async def main(args: argparse.Namespace) -> dict[str, Any]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    embedded = None
    url = args.redis_url
    if url is None:
        embedded = EmbeddedRedis().start()
        url = embedded.url
    redis = aioredis.Redis.from_url(url)
    node = await start_node(settings_for(url, prefix))
    out: dict[str, Any] = {"games": args.games}
    try:
        pairs = []
        for n in range(args.pairs):
            a = await connect(node, await register(node, f"alice{n}"), address=f"10.1.{n}.1")
            b = await connect(node, await register(node, f"bob{n}"), address=f"10.2.{n}.1")
            pairs.append((a, b))
        for kind, decide in KINDS.items():
            before = await usage(redis, prefix)
            rounds = args.games // len(pairs)
            for _ in range(rounds):
                await play_games(node, pairs, decide)
            after = await usage(redis, prefix)
            games = rounds * len(pairs)
            per_game = {g: round((after.get(g, 0) - before.get(g, 0)) / games)
                        for g in ("record", "history", "table")}
            per_game["kept_90_days"] = per_game["record"] + per_game["history"]
            out[kind] = per_game
        for a, b in pairs:
            await a.close()
            await b.close()
    finally:
        await node.stop()
        async for key in redis.scan_iter(match=f"{prefix}*", count=1000):
            await redis.unlink(key)
        await redis.aclose()
        if embedded is not None:
            embedded.stop()
    return out


def print_table(out: dict[str, Any]) -> None:
    print(f"bytes per finished game (MEMORY USAGE), mean of {out['games']} games of each kind")
    print(f"{'kind':<10} {'record':>8} {'history':>8} {'kept 90 d':>10} {'table (7 d)':>12}")
    for kind in KINDS:
        row = out[kind]
        print(f"{kind:<10} {row['record']:>8} {row['history']:>8} {row['kept_90_days']:>10} "
              f"{row['table']:>12}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--games", type=int, default=40, help="games of each kind")
    parser.add_argument("--pairs", type=int, default=4, help="pairs of players")
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    result = asyncio.run(main(arguments))
    if arguments.json:
        print(json.dumps(result))
    else:
        print_table(result)

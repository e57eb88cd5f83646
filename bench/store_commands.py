"""Redis commands a node spends: idle, per idle table, and per table event of a played game.

Run from the repository root::

    python3 bench/store_commands.py                  # 10 idle tables, 3 games, 10 s windows
    python3 bench/store_commands.py --tables 50 --games 5 --window 20 --json

It starts an embedded Redis and ``python -m server`` (its own process; default settings but
generous clocks), and counts the commands Redis executed (``INFO commandstats``, the
script's own ``INFO`` calls left out) in three phases:

1. the node alone, idle, for ``--window`` seconds: commands per second of one node (the
   health check's read of the store identity, the bus, the ownership and matchmaking loops);
2. ``--tables`` tables with two players seated and a game started, nobody acting, for
   ``--window`` seconds: (commands per second - phase 1) / tables = per idle table;
3. ``--games`` games of ``python -m server.bot --against random`` (a guest against the
   server's computer opponent), to the end: commands per table event (every ``rolled``,
   ``moved``, ... of the games' event logs) and per game, everything included (accounts,
   seats, settlement, inbox).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load import free_port, wait_http  # noqa: E402


async def _commands(url: str) -> int:
    import redis.asyncio as aioredis

    redis = aioredis.Redis.from_url(url)
    try:
        stats = await redis.info("commandstats")
    finally:
        await redis.aclose()
    return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")


async def _idle_tables(ws: str, count: int) -> list[Any]:
    from server.client import Client

    clients: list[Any] = []
    for _ in range(count):
        a = await Client.connect(ws, guest=True)
        b = await Client.connect(ws, guest=True)
        table = await a.create_table(mode="competitive")
        await b.join(table)
        await a.wait_for("game_start", table=table)
        clients += [a, b]
    return clients


async def _events(url: str, prefix: str) -> int:
    import redis.asyncio as aioredis

    redis = aioredis.Redis.from_url(url)
    total = 0
    try:
        async for key in redis.scan_iter(match=f"{prefix}*:events", count=1000):
            total += int(await redis.llen(key))
    finally:
        await redis.aclose()
    return total


def run(args: argparse.Namespace) -> dict[str, Any]:
    from server.embedded_redis import EmbeddedRedis

    port = free_port()
    prefix = f"bench-cmds-{secrets.token_hex(3)}:"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TABLE42_LOG_LEVEL="WARNING")
    with EmbeddedRedis() as redis:
        server = subprocess.Popen(
            [sys.executable, "-m", "server", "--port", str(port), "--redis-url", redis.url,
             "--key-prefix", prefix, "--scrypt-n", "2", "--decision-time", "3600",
             "--rate-limit", "100000", "--rate-burst", "100000"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            ws = f"ws://127.0.0.1:{port}/ws"
            wait_http(url + "/healthz", 30, server)
            time.sleep(2.0)  # the node's start-up writes are over
            before = asyncio.run(_commands(redis.url))
            time.sleep(args.window)
            node_per_s = (asyncio.run(_commands(redis.url)) - before) / args.window

            async def idle_phase() -> float:
                clients = await _idle_tables(ws, args.tables)
                await asyncio.sleep(2.0)
                start = await _commands(redis.url)
                await asyncio.sleep(args.window)
                spent = await _commands(redis.url) - start
                for client in clients:
                    await client.close()
                return spent / float(args.window)

            tables_per_s = asyncio.run(idle_phase())
            events_before = asyncio.run(_events(redis.url, prefix))
            before = asyncio.run(_commands(redis.url))
            subprocess.run(
                [sys.executable, "-m", "server.bot", "--level", "random", "--url", ws,
                 "--against", "random", "--games", str(args.games), "--seed", "7"],
                cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, timeout=600)
            spent = asyncio.run(_commands(redis.url)) - before
            events = asyncio.run(_events(redis.url, prefix)) - events_before
        finally:
            server.terminate()
            server.wait(30)
    return {
        "window_s": args.window, "tables": args.tables, "games": args.games,
        "node_idle_commands_per_s": round(node_per_s, 2),
        "idle_table_commands_per_s": round((tables_per_s - node_per_s) / args.tables, 3),
        "table_events": events, "game_commands": spent,
        "commands_per_table_event": round(spent / max(1, events), 3),
        "commands_per_game": round(spent / max(1, args.games), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=10,
                        help="idle tables (two guests each; 10 fits the guest limit)")
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

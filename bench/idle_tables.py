"""What a node's idle tables cost: Redis commands per idle table per minute, and the node's CPU
per second while it holds them.

Run from the repository root (or name another tree with ``--root``: the same measure of an
older commit, for a before/after in one session)::

    nice -n 10 python3 bench/idle_tables.py --tables 10000 --duration 60 --json

A server node (``server.app.create_app``, default settings, a fresh embedded Redis of its own
so that ``INFO commandstats`` counts this node only) runs in this process with no socket open.
First a window of ``--duration`` seconds with no table (the node's fixed cost: heartbeat,
scans, health check, matchmaking and tournament ticks), then ``--tables`` tables are opened
through the node's own creation path (``TableCreation.new_table`` and
``TableCreation.claim_new``: the table and its owner record, as a ``create_table`` makes
them, with no player seated), and after a ``--warmup`` a second window of ``--duration``
seconds. Measured in each window: the calls of every Redis command (``INFO commandstats``
before and after) and this process's CPU time (``time.process_time``; nothing else runs in
it). Per idle table per minute:
``(calls with tables - calls without) / tables / minutes``.

With ``--sockets N`` a third window follows: N guests connected through the client library
(``server.client``) from a process of their own (its CPU is not counted), idle, with the
library's silence watch (an application ``ping`` after a third of ``--silence-timeout``
without a frame, PROTOCOL.md §1; ``0``: off) and no WebSocket ping of their own: the node's
CPU with the tables and the sockets, and its Redis commands.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CLIENTS = """
import asyncio, sys
from server.client import Client
from server.client.connection import post_json

async def main(http, url, count, silence):
    tokens = []
    for _ in range(count):
        status, answer = await post_json(http + "/api/guest", None)
        assert status in (200, 201), (status, answer)
        tokens.append(answer["token"])
    clients = [await Client.connect(url, t, auto_reconnect=False, queue_events=False,
                                    track_tables=False, ping_interval=None,
                                    silence_timeout=silence or None) for t in tokens]
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for c in clients:
        await c.close()

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
"""
"""The idle sockets' process (``--sockets``): guests connected, until its stdin closes."""


def _commands(info: dict[str, Any]) -> dict[str, int]:
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()
            if k.startswith("cmdstat_")}


async def _window(redis: Any, seconds: float) -> tuple[dict[str, int], float]:
    before = _commands(await redis.info("commandstats"))
    cpu = time.process_time()
    await asyncio.sleep(seconds)
    cpu = time.process_time() - cpu
    after = _commands(await redis.info("commandstats"))
    # The two INFO calls themselves are not the node's.
    delta = {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0)}
    if "info" in delta:
        delta["info"] -= 1
    return {k: n for k, n in delta.items() if n}, cpu


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from aiohttp import web

    from server.app import LOBBY, create_app
    from server.config import Settings
    from server.embedded_redis import EmbeddedRedis
    from server.protocol.messages import TableMode

    embedded = EmbeddedRedis().start()
    try:
        import redis.asyncio as aioredis

        settings = Settings(redis_url=embedded.url, key_prefix=f"bench{uuid.uuid4().hex[:6]}:",
                            node_id="bench1", limits=False)
        app = create_app(settings)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        redis = aioredis.Redis.from_url(embedded.url)
        try:
            await asyncio.sleep(args.warmup)
            empty_calls, empty_cpu = await _window(redis, args.duration)
            lobby = app[LOBBY]
            opened = time.perf_counter()
            for i in range(args.tables):
                table_id = f"idle{i}"
                await lobby.creation.claim_new(table_id)
                lobby.creation.new_table(table_id, TableMode.PRIVATE, 0, None)
            opened = time.perf_counter() - opened
            await asyncio.sleep(args.warmup)
            full_calls, full_cpu = await _window(redis, args.duration)
            sockets_calls: dict[str, int] = {}
            sockets_cpu = 0.0
            if args.sockets:
                port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
                clients = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", CLIENTS, f"http://127.0.0.1:{port}",
                    f"ws://127.0.0.1:{port}/ws", str(args.sockets), str(args.silence_timeout),
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    env={**os.environ, "PYTHONPATH": str(ROOT)})
                assert clients.stdout is not None and clients.stdin is not None
                if (await clients.stdout.readline()).strip() != b"ready":
                    raise RuntimeError("the idle sockets did not open")
                await asyncio.sleep(args.warmup)
                sockets_calls, sockets_cpu = await _window(redis, args.duration)
                clients.stdin.close()
                await clients.wait()
        finally:
            await redis.aclose()
            await runner.cleanup()
    finally:
        embedded.stop()
    minutes = args.duration / 60
    empty_total, full_total = sum(empty_calls.values()), sum(full_calls.values())
    return {
        "root": str(Path(args.root).resolve()),
        "tables": args.tables,
        "duration_s": args.duration,
        "open_s": round(opened, 2),
        "commands_per_min_no_tables": round(empty_total / minutes, 1),
        "commands_per_min_with_tables": round(full_total / minutes, 1),
        "commands_per_idle_table_per_min": round(
            (full_total - empty_total) / max(args.tables, 1) / minutes, 3),
        "cpu_ms_per_s_no_tables": round(empty_cpu * 1000 / args.duration, 2),
        "cpu_ms_per_s_with_tables": round(full_cpu * 1000 / args.duration, 2),
        "commands_no_tables": empty_calls,
        "commands_with_tables": full_calls,
        **({"sockets": args.sockets, "silence_timeout": args.silence_timeout,
            "cpu_ms_per_s_with_tables_and_sockets": round(sockets_cpu * 1000 / args.duration,
                                                          2),
            "commands_per_min_with_tables_and_sockets": round(
                sum(sockets_calls.values()) / minutes, 1)} if args.sockets else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--root", default=str(ROOT), help="the tree whose server is measured")
    parser.add_argument("--sockets", type=int, default=0,
                        help="then this many idle guest sockets, from a process of their own")
    parser.add_argument("--silence-timeout", type=float, default=10.0,
                        help="the sockets' silence watch (client library; 0: off)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.root).resolve()))
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()

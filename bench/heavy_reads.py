"""Event-loop CPU per costly read of a finished game: its record (a plain one and a 1.9 MB
one with 1,000 chat lines), its ``.mat``, its review (computed and kept), and the CPU a game's
end spends storing its record. Run by hand from the repository root (real Redis):

    PYTHONPATH=. python3 bench/heavy_reads.py                     # 127.0.0.1:6379
    PYTHONPATH=. python3 bench/heavy_reads.py --redis-url redis://127.0.0.1:6379/0 --json

It runs against whatever ``server`` package it imports (``PYTHONPATH``), so the same file
measures an older checkout too (``PYTHONPATH=<checkout> python3 bench/heavy_reads.py``):
settings it does not know are left out.

What one run does, bounded in time and cleaning up after itself:

1. starts a node in this process (``create_app``, port 0, a fresh key prefix, HTTP rate
   limit and cost budget off) and plays games on it with scripted dice through the test
   helpers (``tests/server/server_helpers.py``): a plain game, a "big" game given 1,000
   chat lines of 300 non-ASCII characters before its end (a chat-heavy game's 1.9 MB record),
   and ``--reviews`` games to review;
2. **game end**: ``GameRecords.save`` of the big and the plain record ``--saves`` times,
   the loop thread's CPU per save (what a game's end spends storing its record);
3. **reads**: ``--reads`` requests of each kind from a client running in another thread
   (its own event loop, ``--concurrency`` at once): the big record with and without gzip,
   the plain record, the big record read right after one more chat line (up to 50 times:
   the body made again), the ``.mat``, each review game's first review (computed, after
   one that starts the worker pool) and a kept review. For each: the CPU of the node's
   event-loop thread per request (``time.thread_time`` of the loop's thread: the figure
   that matters, as that thread moves the checkers) and of the whole process less the
   client's thread (the loop plus the threads it hands compression to; a worker process's
   CPU is not in it), and the bytes received per request;
4. **burst** (``--burst``, 1000): that many reads of the big record at once from one
   address, the cost budget at its defaults (an older tree has none): the answers by
   status, the loop's CPU per read and its longest stall meanwhile (how late a 5 ms timer
   on the node's loop fired);
5. deletes every key under the prefix.

Printed as a table (``--json``: one JSON object). The loop figures are CPU time, steadier
than wall time on a shared machine; client and server share the process's GIL, so the
wall times are not reported.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import random
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import redis.asyncio as aioredis
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "tests" / "server"))

from server_helpers import (  # noqa: E402  (the test helpers play the games)
    RunningServer,
    connect,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.app import create_app  # noqa: E402
from server.config import Settings  # noqa: E402

try:
    from server.app import COST_GATE
    from server.cost_budget import CostBudget
except ImportError:  # an older checkout: no budget
    COST_GATE = None  # type: ignore[assignment]

try:
    from server.__main__ import GC_THRESHOLDS
except ImportError:  # an older checkout
    GC_THRESHOLDS = (700, 10, 10)
from server.tables.records import game_events, game_record  # noqa: E402

_LETTERS = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя      .,!?"


def chat_text(n: int) -> str:
    """300 characters of Cyrillic-looking noise (compresses about as well as real chat)."""
    rng = random.Random(n)
    return "".join(rng.choice(_LETTERS) for _ in range(300))


def settings_for(redis_url: str, prefix: str) -> Settings:
    known = {f.name for f in dataclasses.fields(Settings)}
    values: dict[str, Any] = {
        "host": "127.0.0.1", "port": 0, "redis_url": redis_url, "key_prefix": prefix,
        "trusted_proxies": ("127.0.0.1",), "scrypt_n": 2, "scrypt_r": 1,
        "decision_time": 60.0, "grace_period": 60.0, "rate_limit": 5000.0,
        "rate_burst": 5000, "limits": False, "http_rate_limit": 0.0, "http_cost_rate": 0.0,
        "metrics": False,
    }
    return Settings(**{k: v for k, v in values.items() if k in known})


async def start_node(settings: Settings) -> RunningServer:
    app = create_app(settings, dice_factory=scripted(7))
    runner = web.AppRunner(app, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert isinstance(server, asyncio.Server)
    # The heap as python -m server settles it once its services are up.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return RunningServer(app, runner, server.sockets[0].getsockname()[1], settings)


async def play(node: RunningServer, n: int, chat_lines: int = 0) -> tuple[str, str]:
    """One game between two fresh players (``chat_lines`` chat messages stored before
    its end): (table, game id)."""
    a = await connect(node, await register(node, f"alice{n}"))
    b = await connect(node, await register(node, f"bob{n}"))
    table, _ = await seat_two(node, a, b)
    records = node.lobby.records
    for i in range(chat_lines):
        await records.append_chat(table, 1, {
            "type": "chat", "table": table, "channel": "players", "msg": f"m{i:05d}",
            "from": f"alice{n}", "name": f"alice{n}", "text": chat_text(i), "at": time.time()})
    over = await play_out({0: a, 1: b}, table)
    await a.close()
    await b.close()
    return table, str(over["game_id"])


async def record_of(node: RunningServer, table: str, game_id: str) -> dict[str, Any]:
    """The record the finisher builds for ``game_id`` (for the save figure)."""
    log = await node.lobby.persistence.events_since(table, 0)
    over = next(e for e in log if e.get("type") == "game_over")
    return game_record(
        table=table, mode="competitive", match_length=0, tournament_id=None,
        result={"game_id": game_id, "game_no": 1, "winner_side": over["winner_side"],
                "points": over["points"], "reason": "played", "kind": "single",
                "finished_at": time.time(), "rating": {"rated": True}},
        players=["x", "y"], names=["x", "y"],
        events=[msgpack.packb(e) for e in game_events(log, game_id)], changes={},
        mat_game="", mat_match=None)


class Client(threading.Thread):
    """HTTP requests from a thread of its own (its CPU is kept apart from the node's)."""

    def __init__(self, base: str, paths: list[str], headers: dict[str, str],
                 concurrency: int) -> None:
        super().__init__(daemon=True)
        self.base, self.paths, self.headers = base, paths, headers
        self.concurrency = concurrency
        self.cpu = 0.0
        self.statuses: list[int] = []
        self.received = 0

    def run(self) -> None:
        start = time.thread_time()
        asyncio.run(self._main())
        self.cpu = time.thread_time() - start

    async def _main(self) -> None:
        gate = asyncio.Semaphore(self.concurrency)
        connector = aiohttp.TCPConnector(limit=self.concurrency)
        async with aiohttp.ClientSession(auto_decompress=False, connector=connector) as http:
            async def one(path: str) -> None:
                async with gate, http.get(self.base + path, headers=self.headers) as r:
                    body = await r.read()  # not "+= await": that reads the sum first
                    self.received += len(body)
                    self.statuses.append(r.status)

            await asyncio.gather(*(one(p) for p in self.paths))


IDLE = {"loop": 0.0, "process": 0.0}
"""CPU seconds per second the idle node spends (its periodic duties, this file's polling):
taken off each phase's figure for the time it lasted."""


async def measure_idle(seconds: float = 3.0) -> None:
    loop_cpu, process_cpu, wall = time.thread_time(), time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    wall = time.monotonic() - wall
    IDLE["loop"] = (time.thread_time() - loop_cpu) / wall
    IDLE["process"] = (time.process_time() - process_cpu) / wall


async def measure(node: RunningServer, name: str, paths: list[str],
                  headers: dict[str, str], concurrency: int) -> dict[str, Any]:
    client = Client(node.http, paths, headers, concurrency)
    loop_cpu, process_cpu, wall = time.thread_time(), time.process_time(), time.monotonic()
    client.start()
    await asyncio.to_thread(client.join)
    wall = time.monotonic() - wall
    loop_cpu = time.thread_time() - loop_cpu - IDLE["loop"] * wall
    process_cpu = time.process_time() - process_cpu - IDLE["process"] * wall
    count = len(paths)
    bad = [s for s in client.statuses if s != 200]
    return {"name": name, "requests": count, "errors": len(bad),
            "loop_ms": round(1000 * loop_cpu / count, 3),
            "process_ms": round(1000 * (process_cpu - client.cpu) / count, 3),
            "bytes": client.received // max(1, count)}


async def chat_then_read(node: RunningServer, table: str, game_id: str,
                         times: int) -> dict[str, Any]:
    """A chat line after the game's end, then a read (gzip), ``times`` over: the read that
    finds the chat grown (a stored body made again, once)."""
    loop_cpu = process_cpu = 0.0
    received = 0
    for i in range(times):
        await node.lobby.records.append_chat(table, 1, {
            "type": "chat", "table": table, "channel": "players", "msg": f"late{i:04d}",
            "from": "x", "name": "x", "text": chat_text(10_000 + i), "at": time.time()})
        client = Client(node.http, [f"/api/games/{game_id}"], {"Accept-Encoding": "gzip"}, 1)
        loop0, process0 = time.thread_time(), time.process_time()
        client.start()
        await asyncio.to_thread(client.join)
        loop_cpu += time.thread_time() - loop0
        process_cpu += time.process_time() - process0 - client.cpu
        received += client.received
    return {"name": "record, big, after a late chat line (rebuilt)", "requests": times,
            "errors": 0, "loop_ms": round(1000 * loop_cpu / times, 3),
            "process_ms": round(1000 * process_cpu / times, 3), "bytes": received // times}


async def burst(node: RunningServer, game_id: str, count: int) -> dict[str, Any]:
    """``count`` reads of ``game_id``'s record at once from one address (gzip), the node's
    cost budget at its defaults when it has one: the answers by status, and the event
    loop's longest stall meanwhile (a 5 ms timer's lateness)."""
    gate = node.app.get(COST_GATE) if COST_GATE is not None else None
    if gate is not None:  # the bench turned it off: back to the defaults
        defaults = Settings()
        gate.budget = CostBudget(defaults.http_cost_rate, defaults.http_cost_burst)
    stall = 0.0
    done = False

    async def watch() -> None:
        nonlocal stall
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(0.005)
            stall = max(stall, time.perf_counter() - start - 0.005)

    watcher = asyncio.create_task(watch())
    # The client in a process of its own: its work must not hold this process's GIL.
    loop0 = time.thread_time()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--client-url", f"{node.http}/api/games/{game_id}",
        "--client-count", str(count), stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    loop_cpu = time.thread_time() - loop0
    done = True
    await watcher
    statuses_seen: list[int] = json.loads(out)
    if gate is not None:
        gate.budget = CostBudget(0.0, 1.0)
    statuses = {str(s): statuses_seen.count(s) for s in sorted(set(statuses_seen))}
    return {"name": f"{count} reads at once of the big record", "statuses": statuses,
            "loop_ms_per_read": round(1000 * loop_cpu / count, 3),
            "longest_loop_stall_ms": round(1000 * stall, 1)}


async def measure_saves(node: RunningServer, name: str, record: dict[str, Any],
                        times: int) -> dict[str, Any]:
    records = node.lobby.records
    loop_cpu = time.thread_time()
    for _ in range(times):
        await records.save(record)
    loop_cpu = time.thread_time() - loop_cpu
    return {"name": name, "requests": times, "errors": 0,
            "loop_ms": round(1000 * loop_cpu / times, 3), "process_ms": None, "bytes": None}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--reviews", type=int, default=10)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--burst", type=int, default=1000,
                        help="reads at once of the big record, last (0: none)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--client-url", help=argparse.SUPPRESS)  # the burst's client process
    parser.add_argument("--client-count", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client_url:
        client = Client(args.client_url, [""] * args.client_count,
                        {"Accept-Encoding": "gzip"}, args.client_count)
        await client._main()
        print(json.dumps(client.statuses))
        return
    prefix = f"bench-heavy-{uuid.uuid4().hex[:8]}:"
    node = await start_node(settings_for(args.redis_url, prefix))
    rows: list[dict[str, Any]] = []
    try:
        table, plain = await play(node, 0)
        big_table, big = await play(node, 1, chat_lines=1000)
        reviewed = [(await play(node, 10 + n))[1] for n in range(args.reviews)]
        await measure_idle()
        gzip_ok = {"Accept-Encoding": "gzip"}
        identity = {"Accept-Encoding": "identity"}
        n, c = args.reads, args.concurrency
        rows.append(await measure(node, "record, big (1,000 chat lines), gzip",
                                  [f"/api/games/{big}"] * n, gzip_ok, c))
        rows.append(await measure(node, "record, big, no gzip",
                                  [f"/api/games/{big}"] * n, identity, c))
        rows.append(await measure(node, "record, plain, gzip",
                                  [f"/api/games/{plain}"] * n, gzip_ok, c))
        rows.append(await measure(node, "record, plain, no gzip",
                                  [f"/api/games/{plain}"] * n, identity, c))
        rows.append(await chat_then_read(node, big_table, big, min(n, 50)))
        rows.append(await measure(node, ".mat", [f"/api/games/{plain}/mat"] * n, identity, c))
        # The first review starts the worker pool (a process): not in the figure.
        await measure(node, "warm-up", [f"/api/games/{plain}/review"], gzip_ok, 1)
        rows.append(await measure(node, "review, computed (first request of a game)",
                                  [f"/api/games/{g}/review" for g in reviewed], gzip_ok, 1))
        rows.append(await measure(node, "review, kept",
                                  [f"/api/games/{reviewed[0]}/review"] * n, gzip_ok, c))
        events = len((await node.lobby.records.load(plain) or {}).get("events") or ())
        burst_row = await burst(node, big, args.burst) if args.burst else None
        # Last: a save writes the record again (these are not the games' own records).
        rows.append(await measure_saves(node, "game end: store the plain record",
                                        await record_of(node, table, plain), args.saves))
        rows.append(await measure_saves(node, "game end: store the big record",
                                        await record_of(node, big_table, big), args.saves))
    finally:
        await node.runner.cleanup()
        async with aioredis.Redis.from_url(args.redis_url) as redis:
            keys = [k async for k in redis.scan_iter(match=f"{prefix}*", count=1000)]
            for i in range(0, len(keys), 500):
                await redis.unlink(*keys[i:i + 500])
    if args.json:
        print(json.dumps({"plain_events": events, "idle_loop_ms_per_s": 1000 * IDLE["loop"],
                          "rows": rows, "burst": burst_row}, indent=1))
        return
    print(f"plain record: {events} events; loop CPU and process CPU (less the client) per "
          f"request, ms; idle node: {1000 * IDLE['loop']:.1f} ms/s of loop CPU (taken off)")
    print(f"{'':46} {'loop':>8} {'process':>8} {'bytes':>9} {'errors':>6}")
    for row in rows:
        process = "" if row["process_ms"] is None else f"{row['process_ms']:.3f}"
        size = "" if row["bytes"] is None else str(row["bytes"])
        print(f"{row['name']:46} {row['loop_ms']:8.3f} {process:>8} {size:>9} "
              f"{row['errors']:6}")
    if burst_row is not None:
        print(f"{burst_row['name']}: answers {burst_row['statuses']}, loop CPU "
              f"{burst_row['loop_ms_per_read']} ms a read, longest loop stall "
              f"{burst_row['longest_loop_stall_ms']} ms")


if __name__ == "__main__":
    asyncio.run(main())

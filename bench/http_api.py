"""Public read API throughput: leaderboard pages and profiles per second, 100,000 players.

Run from the repository root, after ``python3 -m pip install -e .``:

    python3 bench/http_api.py                           # embedded redis-server, defaults
    python3 bench/http_api.py --redis-url redis://127.0.0.1:6379/0 --players 100000

What one run does, bounded in time and cleaning up after itself:

1. fills Redis under a fresh ``bench-http-<hex>:`` prefix with ``--players`` players on every
   ladder (Table42 and FIBS rating hashes and boards, a third of them with Boosted points, a
   few Competitive games in the 7-day window), in pipelines of 2,000 players;
2. **store** phases, in this process: ``RatingStore.leaderboard_page`` (a random page of 20,
   with and without a named player's rank) and ``RatingStore.profile`` (a random player), each
   for ``--duration`` seconds with ``--concurrency`` asyncio tasks on one client. Commands per
   call are read from ``INFO commandstats``: a page is one EVALSHA, a profile one pipeline of
   two EVALSHA (the ``{rated}`` and the ``{boosted}`` slot) -- one round trip each;
3. **HTTP** phases: ``python -m server`` in a subprocess (rate limit off), and the same reads
   as ``GET /api/leaderboard/{ladder}`` and ``GET /api/players/{player}`` (a profile also
   reads the account: three commands, still one pipeline) from ``--concurrency`` aiohttp
   tasks in this process, for ``--duration`` seconds each; requests per second, mean and p99
   latency, and the CPU the server process spends per request (from /proc: steadier than
   the rates on a busy machine, and what a node's capacity per core follows from);
4. deletes every key under the prefix and stops the server.

Each phase runs ``--repeat`` times and its best run is reported (least disturbed by the rest
of the machine). Client, server and Redis share the machine: the HTTP figures are a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis

from rating_plugin.keys import KeySpace
from rating_plugin.store import RatingStore
from server.embedded_redis import EmbeddedRedis

ROOT = Path(__file__).resolve().parents[1]
BATCH = 2_000
PAGE = 20


def player_name(i: int) -> str:
    return f"p{i:06d}"


async def fill(client: aioredis.Redis, prefix: str, players: int, seed: int) -> float:
    """Write ``players`` players on every ladder; returns the seconds it took."""
    keys = KeySpace(prefix)
    rng = random.Random(seed)
    now_ms = int(time.time() * 1000)
    started = time.perf_counter()
    for first in range(0, players, BATCH):
        pipe = client.pipeline(transaction=False)
        t42_board: dict[str, float] = {}
        fibs_board: dict[str, float] = {}
        boosted: dict[str, float] = {}
        for i in range(first, min(players, first + BATCH)):
            name = player_name(i)
            games = rng.randint(1, 400)
            wins = rng.randint(0, games)
            rating = int(rng.gauss(1500, 200))
            pipe.hset(keys.rating("table42", name), mapping={
                "rating": rating, "games": games, "wins": wins, "losses": games - wins,
                "newest": now_ms})
            t42_board[name] = rating
            recent = rng.randint(0, 5)
            if recent:
                pipe.zadd(keys.window(name), {f"g{i}-{k}": now_ms - k * 60_000
                                              for k in range(recent)})
            experience = rng.randint(0, 2000)
            fibs_rating = rng.gauss(1500, 150)
            matches = max(1, experience // 5)
            fibs_wins = rng.randint(0, matches)
            pipe.hset(keys.rating("fibs", name), mapping={
                "rating": repr(fibs_rating), "games": matches, "wins": fibs_wins,
                "losses": matches - fibs_wins, "experience": experience})
            if experience >= 10:
                fibs_board[name] = fibs_rating
            if i % 3 == 0:
                boosted[name] = rng.randint(1, 500)
        pipe.zadd(keys.board("table42"), t42_board)
        if fibs_board:
            pipe.zadd(keys.board("fibs"), fibs_board)
        if boosted:
            pipe.zadd(keys.board("boosted"), boosted)
        await pipe.execute()
    return time.perf_counter() - started


async def delete_prefix(client: aioredis.Redis, prefix: str) -> int:
    deleted = 0
    batch: list[bytes] = []
    async for key in client.scan_iter(match=f"{prefix}*", count=5000):
        batch.append(key)
        if len(batch) >= 5000:
            deleted += await client.unlink(*batch)
            batch.clear()
    if batch:
        deleted += await client.unlink(*batch)
    return deleted


async def command_stats(client: aioredis.Redis) -> dict[str, tuple[int, float]]:
    """Command -> (calls, microseconds inside Redis) from ``INFO commandstats``."""
    stats = await client.info("commandstats")
    return {name.removeprefix("cmdstat_"): (int(value["calls"]), float(value["usec"]))
            for name, value in stats.items()}


async def drive(call: Callable[[], Awaitable[object]], tasks: int,
                duration: float) -> tuple[int, list[float]]:
    """Run ``call`` from ``tasks`` tasks for ``duration`` s: calls made and their latencies."""
    latencies: list[float] = []
    deadline = time.perf_counter() + duration

    async def worker() -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(worker() for _ in range(tasks)))
    return len(latencies), latencies


def summary(calls: int, latencies: list[float], duration: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "per_second": calls / duration,
        "mean_ms": 1000 * sum(ordered) / max(1, len(ordered)),
        "p99_ms": 1000 * ordered[int(0.99 * (len(ordered) - 1))] if ordered else 0.0,
    }


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_http(url: str, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited at start-up")
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no answer from {url} in {timeout} s")


async def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    prefix = f"bench-http-{uuid.uuid4().hex[:8]}:"
    client = aioredis.Redis.from_url(url)
    store = RatingStore(client, prefix)
    rng = random.Random(args.seed)
    players = args.players
    result: dict[str, Any] = {"players": players, "concurrency": args.concurrency,
                              "duration": args.duration}
    proc: subprocess.Popen[bytes] | None = None
    try:
        result["fill_seconds"] = await fill(client, prefix, players, args.seed)
        await store.load_scripts()

        def random_player() -> str:
            return player_name(rng.randrange(players))

        def random_offset() -> int:
            return rng.randrange(0, max(1, players - PAGE))

        store_phases: dict[str, Callable[[], Awaitable[object]]] = {
            "store: leaderboard page": lambda: store.leaderboard_page(
                "table42", offset=random_offset(), limit=PAGE),
            "store: page + own rank": lambda: store.leaderboard_page(
                "fibs", offset=random_offset(), limit=PAGE, player=random_player()),
            "store: profile": lambda: store.profile(random_player()),
        }
        phases: dict[str, dict[str, Any]] = {}
        for name, call in store_phases.items():
            best: dict[str, Any] | None = None
            for _ in range(args.repeat):
                before = await command_stats(client)
                cpu = time.process_time()
                calls, latencies = await drive(call, args.concurrency, args.duration)
                cpu = time.process_time() - cpu
                after = await command_stats(client)
                figures: dict[str, Any] = summary(calls, latencies, args.duration)
                used = {cmd: (after[cmd][0] - before.get(cmd, (0, 0.0))[0],
                              after[cmd][1] - before.get(cmd, (0, 0.0))[1]) for cmd in after}
                figures["commands_per_call"] = {
                    cmd: round(used[cmd][0] / max(1, calls), 2)
                    for cmd in ("evalsha", "get", "hmget", "zcount", "zrevrange", "zscore")
                    if cmd in used and used[cmd][0] > calls // 100
                }
                figures["redis_us_per_call"] = used.get("evalsha", (0, 0.0))[1] / max(1, calls)
                figures["client_cpu_us_per_call"] = 1e6 * cpu / max(1, calls)
                if best is None or figures["per_second"] > best["per_second"]:
                    best = figures
            phases[name] = best or {}

        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("REDIS_URL", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port),
             "--redis-url", url, "--key-prefix", prefix, "--http-rate-limit", "0",
             "--matchmaking-pass-interval", "60"],
            cwd=ROOT, env={**env, "TABLE42_LOG_LEVEL": "WARNING"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/healthz", 30, proc)
        connector = aiohttp.TCPConnector(limit=args.concurrency)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def fetch(path: str) -> None:
                async with http.get(base + path) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{path}: {resp.status}")

            http_phases: dict[str, Callable[[], Awaitable[object]]] = {
                "HTTP: leaderboard page": lambda: fetch(
                    f"/api/leaderboard/table42?offset={random_offset()}&limit={PAGE}"),
                "HTTP: page + own rank": lambda: fetch(
                    f"/api/leaderboard/fibs?offset={random_offset()}&limit={PAGE}"
                    f"&player={random_player()}"),
                "HTTP: profile": lambda: fetch(f"/api/players/{random_player()}"),
            }
            for name, call in http_phases.items():
                best = None
                for _ in range(args.repeat):
                    before = await command_stats(client)
                    server_cpu = process_cpu(proc.pid)
                    cpu = time.process_time()
                    calls, latencies = await drive(call, args.concurrency, args.duration)
                    cpu = time.process_time() - cpu
                    server_cpu = process_cpu(proc.pid) - server_cpu
                    after = await command_stats(client)
                    figures = summary(calls, latencies, args.duration)
                    evalsha = after.get("evalsha", (0, 0.0))[1] - before.get("evalsha",
                                                                             (0, 0.0))[1]
                    figures["redis_us_per_call"] = evalsha / max(1, calls)
                    figures["client_cpu_us_per_call"] = 1e6 * cpu / max(1, calls)
                    figures["server_cpu_us_per_call"] = 1e6 * server_cpu / max(1, calls)
                    if best is None or figures["per_second"] > best["per_second"]:
                        best = figures
                phases[name] = best or {}
        result["phases"] = phases
        return result
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        result["deleted_keys"] = await delete_prefix(client, prefix)
        await client.aclose()


def report(result: dict[str, Any]) -> None:
    print(f"{result['players']:,} players filled in {result['fill_seconds']:.1f} s; "
          f"{result['concurrency']} concurrent tasks, {result['duration']:g} s per phase "
          f"(best of the repeats)")
    print(f"{'phase':<26}{'per second':>12}{'mean ms':>10}{'p99 ms':>10}"
          f"{'Redis µs':>10}{'client µs':>11}{'server µs':>11}  Redis commands per call "
          "(in scripts too)")
    for name, figures in result["phases"].items():
        commands = figures.get("commands_per_call")
        shown = "" if commands is None else ", ".join(f"{k} {v}" for k, v in commands.items())
        redis_us = figures.get("redis_us_per_call")
        client_us = figures.get("client_cpu_us_per_call")
        server_us = figures.get("server_cpu_us_per_call")
        print(f"{name:<26}{figures['per_second']:>12,.0f}{figures['mean_ms']:>10.2f}"
              f"{figures['p99_ms']:>10.2f}"
              f"{'' if redis_us is None else f'{redis_us:.1f}':>10}"
              f"{'' if client_us is None else f'{client_us:.0f}':>11}"
              f"{'' if server_us is None else f'{server_us:.0f}':>11}  {shown}")
    print(f"deleted {result['deleted_keys']:,} keys")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"),
                        help="Redis to use (default: an embedded redis-server)")
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per phase run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase (best kept)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = parser.parse_args()
    if not Path("/proc/self/stat").exists():
        parser.error("reads process CPU from /proc: Linux only")
    if not 1 <= args.players <= 10_000_000 or not 0 < args.duration <= 120:
        parser.error("--players must be 1..10,000,000 and --duration 0..120 s")
    if not 1 <= args.repeat <= 20 or not 1 <= args.concurrency <= 1000:
        parser.error("--repeat must be 1..20 and --concurrency 1..1000")
    with ExitStack() as stack:
        url = args.redis_url
        if not url:
            url = stack.enter_context(EmbeddedRedis()).url
        result = asyncio.run(run(url, args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

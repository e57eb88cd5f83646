"""The table-list flood of the hardening tests as a benchmark: many listed tables, loops of
``GET /api/tables`` from another process, and one client's ping round trips meanwhile.

Run from the repository root::

    python3 bench/lobby_list.py                      # 2,000 tables, 32 loops, 15 s
    python3 bench/lobby_list.py --tables 8500 --loops 32 --duration 15 --json

It starts an embedded Redis and ``python -m server`` (its own process; the HTTP rate limit
off unless ``--http-rate-limit`` is given, so the flood is not simply refused; the code of
``--server-root``, by default this checkout), lists ``--tables`` tables through that code's
``Persistence.list_table``, then, for ``--duration`` seconds, runs ``--loops`` request loops
in a separate process while this process sends ``ping`` over a WebSocket back to back (one
at a time) and records each round trip. It prints the ping median and p99 without and with
the flood, the list requests served per second, the server's CPU per list request and the
Redis commands per request (``INFO commandstats``; the script's own commands left out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load import cpu_seconds, free_port, percentile, wait_http  # noqa: E402


def _flood(url: str, loops: int, duration: float, out: Any) -> None:
    async def main() -> int:
        done = 0
        deadline = time.monotonic() + duration
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=loops)
        ) as http:
            async def loop(i: int) -> None:
                nonlocal done
                page = 0
                while time.monotonic() < deadline:
                    async with http.get(f"{url}/api/tables?offset={(page * 7 + i) % 1900}") as r:
                        await r.read()
                        assert r.status in (200, 429), r.status
                    done += 1
                    page += 1
            await asyncio.gather(*(loop(i) for i in range(loops)))
        return done

    out.send(asyncio.run(main()))


async def _pings(ws_url: str, token: str, duration: float) -> list[float]:
    rtts: list[float] = []
    async with aiohttp.ClientSession() as http, http.ws_connect(
        ws_url, headers={"Authorization": f"Bearer {token}"}
    ) as ws:
        await ws.receive()  # welcome
        deadline = time.monotonic() + duration
        n = 0
        while time.monotonic() < deadline and n < 100_000:
            n += 1
            sent = time.perf_counter()
            await ws.send_str(json.dumps({"type": "ping", "id": n}))
            while True:
                frame = await ws.receive(timeout=30)
                if frame.type is not aiohttp.WSMsgType.TEXT:
                    raise RuntimeError(f"the ping socket closed: {frame}")
                if json.loads(frame.data).get("ref") == n:
                    break
            rtts.append(time.perf_counter() - sent)
            await asyncio.sleep(0.002)
    return rtts


async def _commands(url: str) -> int:
    import redis.asyncio as aioredis

    redis = aioredis.Redis.from_url(url)
    try:
        stats = await redis.info("commandstats")
    finally:
        await redis.aclose()
    inner = {"cmdstat_zcard", "cmdstat_zrange", "cmdstat_hmget", "cmdstat_info"}
    return sum(int(v["calls"]) for k, v in stats.items() if k not in inner)


async def _list_tables(redis_url: str, prefix: str, count: int) -> None:
    import redis.asyncio as aioredis

    from server.config import Settings
    from server.store.keys import Keys
    from server.store.persistence import Persistence

    redis = aioredis.Redis.from_url(redis_url)
    try:
        persistence = Persistence(redis, Keys(prefix), Settings(redis_url=redis_url,
                                                                key_prefix=prefix))
        base = time.time() - count
        for i in range(count):
            await persistence.list_table(f"bench{i:06d}", {
                "table": f"bench{i:06d}", "mode": "competitive", "match_length": 0,
                "tournament_id": None, "status": "open" if i % 3 else "playing",
                "players": [f"p{i}", None], "watchers": 0, "created_at": base + i,
                "node": "bench"})
    finally:
        await redis.aclose()


def _load_tables(root: Path, redis_url: str, prefix: str, count: int) -> None:
    """List the tables with the server code under test (its own key layout)."""
    code = (f"import asyncio, sys; sys.path.insert(0, {str(root)!r}); "
            f"sys.path.insert(1, {str(ROOT / 'bench')!r}); import lobby_list; "
            f"sys.path.insert(0, {str(root)!r}); "
            f"asyncio.run(lobby_list._list_tables({redis_url!r}, {prefix!r}, {count}))")
    env = dict(os.environ, PYTHONPATH=str(root))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=root)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from server.embedded_redis import EmbeddedRedis

    port = free_port()
    prefix = f"bench-list-{secrets.token_hex(3)}:"
    work = Path(tempfile.mkdtemp(prefix="table42-list-"))
    with EmbeddedRedis() as redis:
        _load_tables(args.server_root, redis.url, prefix, args.tables)
        print(f"listed {args.tables} tables", file=sys.stderr)
        env = dict(os.environ, PYTHONPATH=str(args.server_root), TABLE42_LOG_LEVEL="WARNING")
        with open(work / "server.log", "wb") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "server", "--port", str(port), "--redis-url", redis.url,
                 "--key-prefix", prefix, "--http-rate-limit", str(args.http_rate_limit),
                 "--scrypt-n", "2",
                 "--rate-limit", "100000", "--rate-burst", "100000"],
                cwd=args.server_root, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                url = f"http://127.0.0.1:{port}"
                wait_http(url + "/healthz", 30, server)
                with urllib_post(url + "/api/guest") as body:
                    token = body["token"]
                print("pinging (quiet), then under the flood", file=sys.stderr)
                quiet = asyncio.run(_pings(f"ws://127.0.0.1:{port}/ws", token, 3.0))
                before_cmds = asyncio.run(_commands(redis.url))
                before_cpu = cpu_seconds(server.pid)
                receiver, sender = multiprocessing.Pipe(duplex=False)
                flood = multiprocessing.Process(target=_flood,
                                                args=(url, args.loops, args.duration, sender))
                flood.start()
                loaded = asyncio.run(_pings(f"ws://127.0.0.1:{port}/ws", token,
                                            args.duration - 0.5))
                flood.join(args.duration + 60)
                served = int(receiver.recv()) if receiver.poll(5) else 0
                cpu = cpu_seconds(server.pid) - before_cpu
                commands = asyncio.run(_commands(redis.url)) - before_cmds
            finally:
                server.terminate()
                server.wait(30)
    ms = 1000.0
    return {
        "tables": args.tables, "http_rate_limit": args.http_rate_limit, "loops": args.loops,
        "duration": args.duration, "server_root": str(args.server_root),
        "ping_quiet_p50_ms": (percentile(quiet, 0.5) or 0) * ms,
        "ping_quiet_p99_ms": (percentile(quiet, 0.99) or 0) * ms,
        "ping_flood_p50_ms": (percentile(loaded, 0.5) or 0) * ms,
        "ping_flood_p99_ms": (percentile(loaded, 0.99) or 0) * ms,
        "pings_under_flood": len(loaded),
        "list_requests_per_s": served / args.duration,
        "server_cpu_per_list_us": 1e6 * cpu / max(1, served),
        "redis_commands_per_list": commands / max(1, served + len(loaded)),
    }


class urllib_post:
    def __init__(self, url: str) -> None:
        import urllib.request

        self._request = urllib.request.Request(url, method="POST")
        self._urlopen = urllib.request.urlopen

    def __enter__(self) -> dict[str, Any]:
        with self._urlopen(self._request, timeout=10) as resp:
            data: dict[str, Any] = json.loads(resp.read())
            return data

    def __exit__(self, *exc: object) -> None:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=2000)
    parser.add_argument("--loops", type=int, default=32)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--http-rate-limit", type=float, default=0.0,
                        help="the server's per-address HTTP rate (0 = off, as in the attack; "
                             "the default server setting is 100)")
    parser.add_argument("--server-root", type=Path, default=ROOT,
                        help="the checkout whose server is run (to compare with another)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:28} {value:.2f}" if isinstance(value, float) else f"{key:28} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

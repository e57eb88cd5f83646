"""What waiting for a replica costs a move (``replica_wait``, server/store/replicas.py).

Run from the repository root::

    python3 bench/replica_wait.py                 # 300 decisions per run
    python3 bench/replica_wait.py --moves 600 --json

It starts a Redis master and a replica of it (``redis-server`` of PATH, or ``REDIS_SERVER``),
then ``python -m server`` on the master twice: ``--replica-wait 0`` (announced once the
master has it) and ``--replica-wait 1`` (the default: once the replica has it too). Each run
plays ``--moves`` decisions of games between two guests (the first legal play, every double
taken; a new game when one ends) and reports the Redis commands the master executed per
decision (``INFO commandstats``, the script's own ``INFO`` left out; ``WAIT`` among them) and
the time from a decision sent to its event at the opponent (p50 / p99, ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load import free_port, wait_http  # noqa: E402


def redis_pair(tmp: Path) -> tuple[list[subprocess.Popen[bytes]], int]:
    server = os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or "redis-server"
    master, replica = free_port(), free_port()
    procs = []
    for port, extra in ((master, []), (replica, ["--replicaof", "127.0.0.1", str(master)])):
        procs.append(subprocess.Popen(
            [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(tmp), "--dbfilename", f"{port}.rdb", *extra],
            stdout=subprocess.DEVNULL))
    import redis

    client = redis.Redis(port=master)
    for _ in range(200):
        try:
            info: dict[str, Any] = client.info("replication")  # type: ignore[assignment]
            if info.get("connected_slaves") == 1:
                break
        except redis.RedisError:
            pass
        time.sleep(0.05)
    return procs, master


async def commands(port: int) -> dict[str, int]:
    import redis.asyncio as aioredis

    client = aioredis.Redis(port=port)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return {k: int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info"}


async def play(ws: str, moves: int) -> list[float]:
    """``moves`` decisions, a game between two new guests at a time: each one's time from
    sent to its event at the opponent."""
    from server.client import Client, default_decision

    times: list[float] = []
    while len(times) < moves:
        a = await Client.connect(ws, guest=True)
        b = await Client.connect(ws, guest=True)
        table = await a.create_table(mode="private")
        await b.join(table)
        await a.wait_for("game_start", table=table)
        while len(times) < moves:
            game = (a.tables[table].state or {}).get("game") or {}
            if (a.tables[table].state or {}).get("status") != "playing":
                break
            if game.get("to_act") is None:
                a.arrived.clear()
                await a.arrived.wait()
                continue
            actor, other = (a, b) if a.side(table) == game["to_act"] else (b, a)
            before = other.tables[table].v
            started = time.perf_counter()
            await actor.request({**default_decision(game), "table": table})
            while other.tables[table].v <= before or a.tables[table].v < other.tables[table].v:
                other.arrived.clear()
                a.arrived.clear()
                await asyncio.wait([asyncio.ensure_future(other.arrived.wait()),
                                    asyncio.ensure_future(a.arrived.wait())],
                                   return_when=asyncio.FIRST_COMPLETED)
            times.append(time.perf_counter() - started)
        await a.close()
        await b.close()
    return times


async def run_one(master: int, wait: int, moves: int) -> dict[str, Any]:
    port = free_port()
    env = {**os.environ, "TABLE42_LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "--redis-url", f"redis://127.0.0.1:{master}/0",
         "--key-prefix", f"bench{wait}:", "--port", str(port), "--replica-wait", str(wait),
         "--limits", "0", "--bot-workers", "0"], env=env, cwd=ROOT)
    try:
        await asyncio.to_thread(wait_http, f"http://127.0.0.1:{port}/readyz", 60, proc)
        await play(f"ws://127.0.0.1:{port}/ws", 20)  # warm up
        before = await commands(master)
        times = await play(f"ws://127.0.0.1:{port}/ws", moves)
        after = await commands(master)
    finally:
        proc.terminate()
        proc.wait(30)
    calls = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    times.sort()
    return {
        "replica_wait": wait,
        "decisions": len(times),
        "commands_per_decision": round(sum(calls.values()) / len(times), 2),
        "waits_per_decision": round(calls.get("cmdstat_wait", 0) / len(times), 2),
        "p50_ms": round(statistics.median(times) * 1000, 2),
        "p99_ms": round(times[int(len(times) * 0.99) - 1] * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        procs, master = redis_pair(Path(tmp))
        try:
            results = [asyncio.run(run_one(master, wait, args.moves)) for wait in (0, 1)]
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(10)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for result in results:
            print(result)


if __name__ == "__main__":
    main()

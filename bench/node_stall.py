"""Busy or dead: how long after an owner's SIGKILL its table is taken over, whether an owner
whose event loop is busy for 10 s loses its table (and whether its players are told
``held``), and how many Redis commands an idle node sends a minute.

Run from the repository root (run by hand; it asserts nothing)::

    python3 bench/node_stall.py                      # this tree's server
    python3 bench/node_stall.py --root /tmp/before   # another tree's (the same harness)
    python3 bench/node_stall.py --kills 5 --stall 10 --idle 60 --json

It starts a redis-server of its own on a free port (so that ``INFO commandstats`` counts
this bench's commands alone) and ``python -m server`` nodes through the failover tests'
harness (``tests/failover/nodes.py``) with the server's default ownership timings
(``lease_ttl`` 6 s, ``lease_renew`` 2 s, ``takeover_scan`` 1 s, ``loop_stuck_limit`` 30 s):

- ``kill``: a rated game on node k1 (both players on it), a few decisions, SIGKILL k1: the
  seconds until k2 holds the table's owner record (polled every 20 ms); ``--kills`` runs;
- ``stall``: a game on s1, whose event loop is then kept busy for ``--stall`` seconds
  (the harness's stall hook: Python on the loop's thread, as a long request; SIGSTOP would
  stop every thread): whether s2 took the table over (and after how long), whether the
  players were told ``held``, and the seconds from the stall's end until a decision sent
  during it was answered;
- ``idle`` (first, on the empty store): one node alone, no player, for ``--idle`` seconds
  after a settling time (the matchmaking pass at its default period, 1 s):
  Redis commands a minute (``INFO commandstats``: top-level calls and the commands scripts
  ran are counted alike), by command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "failover"))

import redis.asyncio as aioredis  # noqa: E402
from nodes import (  # noqa: E402
    Cluster,
    Player,
    default_decision,
    free_port,
    freshest,
    has_flag,
    play_moves,
    seat_two,
)

DEFAULTS: dict[str, Any] = {"lease_ttl": 6.0, "lease_renew": 2.0, "takeover_scan": 1.0,
                            "forward_timeout": 30.0, "grace_period": 60.0,
                            "decision_time": 60.0, "matchmaking_pass_interval": 1.0,
                            "matchmaking_hold": 0.8}
STAY = {"silence_timeout": None, "ping_interval": None}


async def owner(redis: aioredis.Redis, cluster: Cluster, table: str) -> str:
    raw = await redis.hget(cluster.key(f"{{t:{table}}}:lease"), "node")  # type: ignore[misc]
    return "" if raw is None else raw.decode()


async def game_on(cluster: Cluster, node_name: str, tag: str) -> tuple[list[Player], str]:
    node = cluster.nodes[node_name]
    players = [await cluster.player(f"{p}{tag}", node, **STAY) for p in ("pa", "pb")]
    table = await seat_two(*players)
    await play_moves(players, table, 6)
    return players, table


async def one_kill(cluster: Cluster, redis: aioredis.Redis, n: int) -> dict[str, Any]:
    victim, peer = f"k{n}a", f"k{n}b"
    await cluster.start_many([victim, peer])
    players, table = await game_on(cluster, victim, uuid.uuid4().hex[:6])
    loop = asyncio.get_running_loop()
    cluster.nodes[victim].kill()
    killed = loop.time()
    took: float | None = None
    while loop.time() < killed + 60:
        if await owner(redis, cluster, table) == peer:
            took = loop.time() - killed
            break
        await asyncio.sleep(0.02)
    for p in players:
        await Player.close(p)
    cluster.nodes[peer].kill()
    return {"case": "kill", "takeover_after_sigkill_s": None if took is None else round(took, 2)}


async def one_stall(cluster: Cluster, redis: aioredis.Redis, stall: float) -> dict[str, Any]:
    await cluster.start("s1", stall=stall)
    await cluster.start("s2")
    players, table = await game_on(cluster, "s1", uuid.uuid4().hex[:6])
    loop = asyncio.get_running_loop()
    cluster.nodes["s1"].stall()
    stalled = loop.time()
    await asyncio.sleep(0.2)
    state = freshest(players, table)
    assert state is not None
    game = state["game"]
    actor = next(p for p in players if p.side(table) == int(game["to_act"]))
    request = asyncio.ensure_future(actor.request({**default_decision(game), "table": table},
                                                  timeout=120))
    taken: float | None = None
    answered: float | None = None
    while loop.time() < stalled + stall + 15:
        if taken is None and await owner(redis, cluster, table) == "s2":
            taken = loop.time() - stalled
        if answered is None and request.done():
            answered = loop.time() - stalled
        await asyncio.sleep(0.05)
    outcome: str
    try:
        async with asyncio.timeout(60):
            reply = await request
        outcome = str(reply.get("type", "?"))
    except Exception as exc:  # reported, not raised
        outcome = f"{type(exc).__name__}: {exc}"
    held = sum(len(p.of_type("held", table)) for p in players)
    for p in players:
        await Player.close(p)
    return {"case": "stall", "stall_s": stall,
            "taken_over_after_s": None if taken is None else round(taken, 2),
            "held_messages": held, "decision_sent_in_stall": outcome,
            "answered_after_stall_end_s": None if answered is None
            else round(answered - stall, 2)}


async def idle(cluster: Cluster, redis: aioredis.Redis, seconds: float) -> dict[str, Any]:
    await cluster.start("i1")
    await asyncio.sleep(10)  # the start's own commands, then nothing but the node's duties
    await redis.config_resetstat()
    await asyncio.sleep(seconds)
    stats = await redis.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}
    calls.pop("info", None)
    per_minute = {k: round(v * 60 / seconds, 1) for k, v in sorted(calls.items())}
    return {"case": "idle", "seconds": seconds,
            "commands_per_minute": round(sum(calls.values()) * 60 / seconds, 1),
            "by_command": per_minute}


async def run(args: argparse.Namespace, url: str) -> list[dict[str, Any]]:
    prefix = f"bench-stall-{uuid.uuid4().hex[:8]}:"
    redis = aioredis.Redis.from_url(url)
    results: list[dict[str, Any]] = []
    root = args.root.resolve()
    flags = {k: v for k, v in DEFAULTS.items() if has_flag("--" + k.replace("_", "-"), root)}
    with tempfile.TemporaryDirectory() as logs:
        cluster = Cluster(url, prefix, Path(logs), root=root, **flags)
        try:
            if args.idle > 0:  # first: a store with nothing else in it
                results.append(await idle(cluster, redis, args.idle))
                print(results[-1], file=sys.stderr)
                cluster.nodes["i1"].kill()
                await cluster.nodes["i1"].wait()
            for n in range(args.kills):
                results.append(await one_kill(cluster, redis, n))
                print(results[-1], file=sys.stderr)
            if args.stall > 0:
                results.append(await one_stall(cluster, redis, args.stall))
                print(results[-1], file=sys.stderr)
        finally:
            await cluster.close()
            await redis.aclose()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the tree whose server the nodes run (default: this one)")
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--stall", type=float, default=10.0)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", data],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            import time

            import redis as sync_redis
            for _ in range(100):
                with contextlib.suppress(sync_redis.ConnectionError):
                    if sync_redis.Redis(port=port).ping():
                        break
                time.sleep(0.05)
            results = asyncio.run(run(args, f"redis://127.0.0.1:{port}/0"))
        finally:
            server.terminate()
            server.wait(10)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(" ".join(f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(os.EX_OK if main() == 0 else 1)

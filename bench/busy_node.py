"""Busy-node benchmark: is a busy node ever taken for a dead one? Two nodes with
the server's default settings on one Redis, live paced games on both, and heavy work offered
to ``n1`` at the issue's sizes, each load alone and then all together; the figures of each
phase. The scenario is the test's (``tests/failover/busy_scenario.py``,
``test_busy_not_dead.py`` runs it at the suite's sizes).

Run from the repository root, with a Redis at ``--redis-url`` (a fresh key prefix, deleted
afterwards); about 4 minutes at the full sizes::

    python3 bench/busy_node.py                          # every phase, the issue's sizes
    python3 bench/busy_node.py --phases records,together --record-reads 1000
    python3 bench/busy_node.py --scale suite            # the test's sizes
    python3 bench/busy_node.py --stall 10 --kill        # then SIGSTOP n1 10 s, SIGKILL n2
    python3 bench/busy_node.py --root ../main --json before.json   # another tree's server

The phases (``--phases``, in this order by default): ``flood`` (``ack_events`` with 118
random 128-character ids and ``watch`` of a random table, in turn, at 28 messages a second
from each of 64 guest sockets for 30 s), ``overload`` (300 new games arriving at 10 a second,
each played flat out by two new guests), ``reviews`` (100 concurrent ``GET
/api/games/{id}/review`` of a game never reviewed, one address each), ``records`` (1,000
concurrent anonymous ``GET /api/games/{id}`` of a ~1.9 MB record, 1,000 chat lines, from
one address), ``together`` (the four at once); on request (``--phases``) also ``mats``
(``GET /api/games/{id}/mat`` of the large record, ``--record-reads`` at once from one
address) and ``reviews_cached`` (after ``reviews``: the same game's review again).

Each phase: the seated players' ping (through their own sockets, every 0.5 s, the paced
games' decisions every 2-5 s) p50 / p99 / max, takeovers of their tables (owner changes in
Redis), "is gone" / "heartbeat had run out" log lines, ``held`` frames and ``unavailable``
refusals sent to seated players while the bench's Redis client was answered, refusals by
kind and the ones without ``busy`` / ``rate_limited`` and ``retry_after``, ``n1``'s resident
memory (before, peak, after, growth over the second half of a sustained load), ``n1``'s and
``n2``'s CPU over the load (the process's, every thread: with one load alone, per request),
and what each load saw (latencies, answers). The verdict lines are the test's requirements.

``--stall S`` then pauses ``n1`` (SIGSTOP) for S seconds, the paced games running: the
figure is whether a peer took its tables (the issue: a 10 s stall takes nothing). ``--kill``
then kills ``n2`` (SIGKILL): the figure is the time until each of its paced tables has
another owner in Redis. The load generators run in their own processes; the bench
process's own CPU is light (pings and paced decisions), so the pings measure the node.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "failover"))

import redis.asyncio as aioredis  # noqa: E402
from busy_scenario import (  # noqa: E402
    ALL_PHASES,
    FULL,
    PHASES,
    SUITE,
    PhaseRecord,
    World,
    build,
    owner_of,
    run,
    violations,
)
from nodes import Cluster, Player, seat_two  # noqa: E402

from server.client import register  # noqa: E402


def row(rec: PhaseRecord) -> str:
    f = rec.figures()
    mem = f["rss_n1_mib"]
    refusals: dict[str, int] = {}
    for load in rec.loads.values():
        for key, n in (load.get("refusals") or {}).items():
            refusals[key] = refusals.get(key, 0) + int(n)
    refused = ", ".join(f"{k} {v}" for k, v in sorted(refusals.items())) or "none"
    bad = sum(int(load.get("bad_count", 0)) for load in rec.loads.values())

    def mib(value: float | None) -> str:
        return "?" if value is None else f"{value:.0f}"

    return (f"| {rec.name} | {f['ping_p50_ms']} / {f['ping_p99_ms']} / {f['ping_max_ms']} ms "
            f"| {f['takeovers']} | {f['gone_lines']} | {f['held']} / {f['unavailable']} | "
            f"{refused} | {bad} | {mib(mem['before'])} / {mib(mem['peak'])} / "
            f"{mib(mem['after'])} ({mib(mem['second_half_growth'])}) | "
            f"{f['cpu_s'].get('n1', 0):.1f} / {f['cpu_s'].get('n2', 0):.1f} s |")


def per_load(rec: PhaseRecord) -> list[str]:
    lines = []
    f = rec.figures()
    for kind, load in rec.loads.items():
        if kind in ("records", "mats", "reviews", "reviews_cached"):
            per = f[kind].get("n1_cpu_ms_per_request")
            p50, p99 = load.get("latency_p50_s"), load.get("latency_p99_s")
            lines.append(
                f"- {rec.name}/{kind}: {load.get('requests')} requests, answers "
                f"{load.get('statuses')}, latency p50 {p50 or 0:.2f} s / p99 {p99 or 0:.2f} s"
                + (f", n1 CPU {per} ms a request" if per is not None else ""))
        elif kind == "flood":
            lines.append(f"- {rec.name}/flood: {load.get('sockets')} sockets sent "
                         f"{load.get('sent')}, answers {load.get('answers')}, closes "
                         f"{load.get('closes')}")
        elif kind == "overload":
            p99 = load.get("move_p99_s")
            lines.append(
                f"- {rec.name}/overload: {load.get('games_offered', 0)} games offered, "
                f"{load.get('games_started', 0)} admitted, {load.get('not_admitted', 0)} "
                f"not reached, {load.get('moves', 0)} moves "
                f"({load.get('moves', 0) / max(1e-9, load.get('wall_s') or 1):.0f}/s), "
                f"admitted games' move p99 {'?' if p99 is None else f'{p99 * 1000:.0f} ms'}, "
                f"create refused share {load.get('create_refused_share', 0):.0%}")
    return lines


async def stall(world: World, seconds: float) -> dict[str, Any]:
    """A new paced table on n1 (its tables may have moved in a phase), then SIGSTOP n1 for
    ``seconds`` with the paced games running; the owners before and after, the gone lines."""
    tokens = [await register(world.setup.ws_url, f"stall{i}", "correct horse")
              for i in range(2)]
    a, b = [await Player.open(world.n1, token) for token in tokens]
    fresh = await seat_two(a, b)
    tables = [fresh, *world.tables.values()]
    before = {t: await owner_of(world, t) for t in tables}
    offsets = {n.name: len(n.log()) for n in world.cluster.nodes.values()}
    world.n1.pause()
    try:
        await asyncio.sleep(seconds)
    finally:
        world.n1.resume()
    await asyncio.sleep(3.0)
    after = {t: await owner_of(world, t) for t in tables}
    gone = [f"{n.name}: {line}" for n in world.cluster.nodes.values()
            for line in n.log()[offsets.get(n.name, 0):].splitlines()
            if "is gone" in line or "heartbeat had run out" in line]
    with contextlib.suppress(Exception):
        await asyncio.gather(a.close(), b.close())
    return {"stall_s": seconds, "n1_tables": sum(o == world.n1.name for o in before.values()),
            "taken_over": [f"{t}: {before[t]} -> {after[t]}" for t in tables
                           if after[t] != before[t]], "gone_lines": gone}


async def kill(world: World, limit: float = 60.0) -> dict[str, Any]:
    """SIGKILL n2; seconds until each of its paced tables has another owner."""
    mine = [t for t in world.tables.values() if await owner_of(world, t) == world.n2.name]
    killed = time.monotonic()
    world.n2.kill()
    took: dict[str, float] = {}
    while len(took) < len(mine) and time.monotonic() - killed < limit:
        for t in mine:
            if t not in took and await owner_of(world, t) not in ("", world.n2.name):
                took[t] = time.monotonic() - killed
        await asyncio.sleep(0.05)
    return {"tables": len(mine), "takeover_s": sorted(round(v, 2) for v in took.values()),
            "not_taken_over": len(mine) - len(took)}


async def guarded(step: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """A step after the phases: its failure is a figure, the phases' figures are kept."""
    try:
        async with asyncio.timeout(180):
            return await step
    except Exception as exc:
        return {"failed": repr(exc)}


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    scale = FULL if args.scale == "full" else SUITE
    overrides = {k: v for k, v in (("record_reads", args.record_reads),
                                   ("reviews", args.reviews),
                                   ("flood_sockets", args.flood_sockets),
                                   ("overload_games", args.overload_games),
                                   ("load_seconds", args.load_seconds)) if v is not None}
    scale = dataclasses.replace(scale, **overrides)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = set(phases) - set(ALL_PHASES)
    if unknown:
        raise SystemExit(f"unknown phases: {sorted(unknown)}")
    prefix = f"bench-busy-{uuid.uuid4().hex[:8]}:"
    redis = aioredis.Redis.from_url(args.redis_url)
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as logs:
        root = Path(args.root).resolve() if args.root else ROOT
        cluster = Cluster(args.redis_url, prefix, Path(logs), root=root)
        try:
            world = await build(cluster, redis, scale, phases)
            print(f"record {world.game_id}: {world.record_bytes:,} bytes", file=sys.stderr)
            records = await run(world, phases, keep_going=bool(args.stall or args.kill))
            if args.stall:
                extra["stall"] = await guarded(stall(world, args.stall))
            if args.kill:
                extra["kill"] = await guarded(kill(world))
            world.stop.set()
            for task in world.tasks:
                task.cancel()
            await asyncio.gather(*world.tasks, return_exceptions=True)
        finally:
            await cluster.close()
            if args.logs:
                print(cluster.logs(), file=sys.stderr)
            keys = [k async for k in redis.scan_iter(match=prefix + "*", count=1000)]
            for chunk in range(0, len(keys), 500):
                await redis.unlink(*keys[chunk:chunk + 500])
            await redis.aclose()
    return {"scale": dataclasses.asdict(scale), "record_bytes": world.record_bytes,
            "records": records, **extra}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--scale", choices=("full", "suite"), default="full")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--record-reads", type=int, default=None)
    parser.add_argument("--reviews", type=int, default=None)
    parser.add_argument("--flood-sockets", type=int, default=None)
    parser.add_argument("--overload-games", type=int, default=None)
    parser.add_argument("--load-seconds", type=float, default=None)
    parser.add_argument("--stall", type=float, default=0.0, help="then SIGSTOP n1 this long")
    parser.add_argument("--kill", action="store_true", help="then SIGKILL n2")
    parser.add_argument("--root", default=None, help="the tree whose server the nodes run")
    parser.add_argument("--logs", action="store_true", help="print the nodes' logs")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    out = asyncio.run(bench(args))
    records: list[PhaseRecord] = out.pop("records")
    lines = [f"Record: {out['record_bytes']:,} bytes. Scale: {out['scale']}", "",
             "| phase | seated ping p50 / p99 / max | takeovers | gone lines | held / "
             "unavailable | refusals | bad refusals | n1 RSS MiB before / peak / after "
             "(2nd-half growth) | CPU n1 / n2 |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [row(rec) for rec in records]
    lines.append("")
    for rec in records:
        lines += per_load(rec)
    lines.append("")
    broken = [v for rec in records for v in violations(rec)]
    lines += ["Requirements broken:" if broken else "Requirements: all met.", *broken]
    for key in ("stall", "kill"):
        if key in out:
            lines.append(f"{key}: {out[key]}")
    lines.append(f"({time.monotonic() - started:.0f} s)")
    print("\n".join(lines))
    if args.json is not None:
        out["phases"] = [rec.figures() for rec in records]
        out["violations"] = broken
        args.json.write_text(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())

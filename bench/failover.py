"""Failover benchmark (ownership and fencing): how long a table is without an owner after
SIGKILL, and what fenced writes cost per move.

Run from the repository root, with a Redis at ``--redis-url`` for the first part (a fresh key
prefix, deleted afterwards)::

    python3 bench/failover.py                       # both parts, 50 kills
    python3 bench/failover.py --kills 50 --json
    python3 bench/failover.py --part fencing --rounds 3

**takeover**: three ``python -m server`` nodes (``tests/failover/nodes.py``, the same harness
as the tests, with its short ownership timings unless ``--lease-ttl``/``--lease-renew``/
``--takeover-scan`` say otherwise). For each of ``--kills`` kills: a rated game is opened
on one node (the owner) by a player who then moves to another node, where the opponent
joined; a few decisions are played; the owner gets SIGKILL; the player to act keeps trying
its decision through its node (retrying every ``--retry`` seconds while the table is
``unavailable``). The figure is the time from the SIGKILL to the first versioned event of
that table that reaches a player afterwards (the new owner's first event). The killed node
is started again before the next kill. p50 / p99 / max over the kills.

**fencing**: the server CPU per move of ``bench/load.py`` (its own server process, embedded
Redis, bots playing rated games; ``/proc/<pid>/stat`` around a window), run alternately on
this tree and on a baseline in the same session: this tree with ``TABLE42_FENCING=0`` when
its server has a ``fencing`` setting, otherwise a git worktree of ``--baseline`` (default
``75df6a1``, the commit before the ownership work) made for the run and removed after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "failover"))

import redis.asyncio as aioredis  # noqa: E402
from nodes import (  # noqa: E402
    OWNERSHIP_FLAGS,
    Cluster,
    Node,
    has_flag,
    play_moves,
    resync,
    seat_two,
    step,
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


# --- takeover ------------------------------------------------------------------------------


async def one_kill(cluster: Cluster, owner: Node, home: Node, n: int, args: argparse.Namespace
                   ) -> float | None:
    """Seconds from SIGKILL of ``owner`` to the first event of its table afterwards (None
    when no event came within ``--give-up``)."""
    a = await cluster.player(f"fa{n}x{uuid.uuid4().hex[:6]}", owner, request_timeout=2.0)
    b = await cluster.player(f"fb{n}x{uuid.uuid4().hex[:6]}", home, request_timeout=2.0)
    try:
        table = await seat_two(a, b)
        await a.switch(home)
        await resync(a, table)
        await play_moves([a, b], table, 4)
        v_kill = max(p.tables[table].v for p in (a, b))
        first: list[float] = []

        def seen(message: dict[str, Any]) -> None:
            v = message.get("v")
            if not first and message.get("table") == table and isinstance(v, int) \
                    and v > v_kill:
                first.append(time.perf_counter())

        a.on_frame = b.on_frame = seen
        owner.kill()
        killed = time.perf_counter()
        await owner.wait()
        with contextlib.suppress(Exception):
            await step([a, b], table, retry_for=args.give_up, pause=args.retry)
        return first[0] - killed if first else None
    finally:
        for p in (a, b):
            with contextlib.suppress(Exception):
                await p.close()


async def takeover(args: argparse.Namespace) -> dict[str, Any]:
    prefix = f"bench-failover-{uuid.uuid4().hex[:8]}:"
    redis = aioredis.Redis.from_url(args.redis_url)
    flags = {k: v for k, v in (("lease_ttl", args.lease_ttl), ("lease_renew", args.lease_renew),
                               ("takeover_scan", args.takeover_scan)) if v is not None}
    times: list[float] = []
    failed = 0
    with tempfile.TemporaryDirectory() as logs:
        cluster = Cluster(args.redis_url, prefix, Path(logs), **flags)
        try:
            nodes = await cluster.start_many(["k1", "k2", "k3"])
            for i in range(args.kills):
                owner, home = nodes[i % 3], nodes[(i + 1) % 3]
                took = await one_kill(cluster, owner, home, i, args)
                if took is None:
                    failed += 1
                else:
                    times.append(took)
                if not args.quiet:
                    shown = "none" if took is None else f"{took * 1000:.0f} ms"
                    print(f"kill {i + 1}/{args.kills}: {shown}", file=sys.stderr)
                nodes[i % 3] = await cluster.start(owner.name)
                if failed >= 3 and not times:
                    break  # no takeover at all (a server without it): stop early
        finally:
            await cluster.close()
            keys = [k async for k in redis.scan_iter(match=prefix + "*", count=1000)]
            for chunk in range(0, len(keys), 500):
                await redis.unlink(*keys[chunk:chunk + 500])
            await redis.aclose()
    timings = {flag: OWNERSHIP_FLAGS[flag] for flag in OWNERSHIP_FLAGS if has_flag(flag)}
    timings.update({"--" + k.replace("_", "-"): v for k, v in flags.items()})
    return {
        "kills": args.kills, "taken_over": len(times), "not_taken_over": failed,
        "p50_ms": 1000 * percentile(times, 50), "p99_ms": 1000 * percentile(times, 99),
        "max_ms": 1000 * max(times) if times else float("nan"),
        "mean_ms": 1000 * statistics.fmean(times) if times else float("nan"),
        "retry_ms": 1000 * args.retry, "server_flags": timings,
    }


# --- fencing -------------------------------------------------------------------------------


def run_load(root: Path, env_extra: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, str(root / "bench" / "load.py"), "--games", str(args.games),
           "--clients", str(args.clients), "--duration", str(args.duration),
           "--warmup", str(args.warmup), "--echo-duration", "1", "--idle", "0",
           "--json", "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(root), **env_extra)
    out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                         timeout=args.duration * 10 + 300)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout[out.stdout.index("{"):])
    load = result["load"]
    return {"server_us": load["server_cpu_per_move_us"],
            "redis_us": load.get("redis_cpu_per_move_us"),
            "moves_per_s": load.get("moves_per_second") or load.get("moves_per_s")}


def fencing(args: argparse.Namespace) -> dict[str, Any]:
    variants: list[tuple[str, Path, dict[str, str]]] = []
    baseline_dir: Path | None = None
    if has_flag("--fencing"):
        variants = [("fencing off (TABLE42_FENCING=0)", ROOT, {"TABLE42_FENCING": "0"}),
                    ("fencing on", ROOT, {})]
    elif args.baseline_dir is not None:
        # A baseline tree made beforehand (e.g. an export with the same compiled extension
        # as this tree: a fresh worktree has none, and would run the pure-Python generator).
        variants = [(f"before ({args.baseline_dir})", args.baseline_dir.resolve(), {}),
                    ("this tree", ROOT, {})]
    else:
        baseline_dir = Path(tempfile.mkdtemp(prefix="table42-baseline-"))
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach",
                        str(baseline_dir), args.baseline], check=True, capture_output=True)
        variants = [(f"before ({args.baseline})", baseline_dir, {}), ("this tree", ROOT, {})]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in variants}
    try:
        for r in range(args.rounds):
            # ABBA order: a drift of the machine's load during the run hits both alike
            for name, root, env in (variants if r % 2 == 0 else variants[::-1]):
                result = run_load(root, env, args)
                runs[name].append(result)
                if not args.quiet:
                    print(f"round {r + 1}/{args.rounds} {name}: "
                          f"{result['server_us']:.1f} µs server CPU per move", file=sys.stderr)
    finally:
        if baseline_dir is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(baseline_dir)], capture_output=True)
    summary: dict[str, Any] = {"games": args.games, "duration": args.duration, "variants": {}}
    for name, results in runs.items():
        server = [x["server_us"] for x in results]
        redis = [x["redis_us"] for x in results if x["redis_us"] is not None]
        summary["variants"][name] = {
            "server_us_runs": server, "server_us_median": statistics.median(server),
            "redis_us_median": statistics.median(redis) if redis else None,
            "moves_per_s": [x["moves_per_s"] for x in results],
        }
    before, after = (summary["variants"][name]["server_us_median"] for name, _, _ in variants)
    summary["server_cpu_change_pct"] = 100 * (after - before) / before
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("both", "takeover", "fencing"), default="both")
    parser.add_argument("--kills", type=int, default=50, help="owner kills (default 50)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL",
                                                              "redis://127.0.0.1:6379/0"))
    parser.add_argument("--lease-ttl", type=float, default=None)
    parser.add_argument("--lease-renew", type=float, default=None)
    parser.add_argument("--takeover-scan", type=float, default=None)
    parser.add_argument("--retry", type=float, default=0.01,
                        help="seconds between two tries of the decision while unavailable")
    parser.add_argument("--give-up", type=float, default=30.0,
                        help="seconds after a kill with no event: counted as not taken over")
    parser.add_argument("--baseline", default="75df6a1",
                        help="commit measured against when the server has no fencing switch")
    parser.add_argument("--baseline-dir", type=Path, default=None,
                        help="fencing: an existing tree to measure against instead of a "
                             "fresh worktree of --baseline")
    parser.add_argument("--rounds", type=int, default=3, help="fencing: runs of each variant")
    parser.add_argument("--games", type=int, default=100, help="fencing: concurrent games")
    parser.add_argument("--clients", type=int, default=2, help="fencing: client processes")
    parser.add_argument("--duration", type=float, default=15.0, help="fencing: window, s")
    parser.add_argument("--warmup", type=float, default=3.0, help="fencing: warm-up, s")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    if args.part in ("both", "takeover"):
        result["takeover"] = asyncio.run(takeover(args))
    if args.part in ("both", "fencing"):
        result["fencing"] = fencing(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        if "takeover" in result:
            t = result["takeover"]
            print(f"takeover after SIGKILL: p50 {t['p50_ms']:.0f} ms, p99 {t['p99_ms']:.0f} ms, "
                  f"max {t['max_ms']:.0f} ms over {t['taken_over']} kills "
                  f"({t['not_taken_over']} not taken over); flags {t['server_flags']}")
        if "fencing" in result:
            f = result["fencing"]
            for name, v in f["variants"].items():
                print(f"{name}: server CPU per move {v['server_us_median']:.1f} µs (runs "
                      f"{', '.join(f'{x:.1f}' for x in v['server_us_runs'])}), Redis "
                      f"{v['redis_us_median']} µs")
            print(f"change: {f['server_cpu_change_pct']:+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())

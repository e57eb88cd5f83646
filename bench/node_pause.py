"""Node-loss benchmark: an owner node paused (SIGSTOP) with both players of a rated game on
it, at the server's default timings. Does anyone forfeit, does the game end, how long until
the players are served again?

Run from the repository root, with a Redis at ``--redis-url`` (a fresh key prefix, deleted
afterwards)::

    python3 bench/node_pause.py                     # pauses of 35 s and 90 s, both client kinds
    python3 bench/node_pause.py --pauses 35 --json
    python3 bench/node_pause.py --pauses 35 --clients stay --root ../main   # another tree's server

Two ``python -m server`` nodes (``tests/failover/nodes.py``, the tests' harness) with the
default ownership timings (``lease_ttl`` 6 s, ``lease_renew`` 2 s, ``takeover_scan`` 1 s),
``grace_period`` 60 s and ``node_loss_grace`` 180 s (the defaults), ``decision_time`` 60 s.
For each pause and each client kind a rated game is opened on the owner, a few decisions
are played, the owner is paused for the pause, resumed, and the game played to its end:

- ``stay``: clients without the silence watch nor WebSocket pings (``silence_timeout=None,
  ping_interval=None``): their sockets stay open on the paused owner; figure: seconds from
  SIGCONT until both got ``resume`` from the new owner (re-attached);
- ``watch``: the client library's default (pings, gives a silent socket up after 10 s,
  reconnects to the other node); figure: seconds from SIGSTOP until both are connected to
  the other node.

Each run reports the game's end reason (``normal`` unless someone forfeited).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    TAKEOVER_BOUND,
    Cluster,
    Player,
    has_flag,
    play_moves,
    play_to_end,
    seat_two,
    wait_until,
)

from server.client import RequestFailed  # noqa: E402

DEFAULTS: dict[str, Any] = {"lease_ttl": 6.0, "lease_renew": 2.0, "takeover_scan": 1.0,
            "grace_period": 60.0, "node_loss_grace": 180.0, "decision_time": 60.0}


async def one_pause(cluster: Cluster, pause: float, kind: str, n: int) -> dict[str, Any]:
    n1, n2 = cluster.nodes["p1"], cluster.nodes["p2"]
    options: dict[str, Any] = (
        {"silence_timeout": None, "ping_interval": None} if kind == "stay"
        else {"auto_reconnect": True, "urls": [n2.ws_url]})
    tag = uuid.uuid4().hex[:6]
    players = [await cluster.player(f"{name}{n}x{tag}", n1, **options)
               for name in ("pa", "pb")]
    table = await seat_two(*players)
    await play_moves(players, table, 6)
    loop = asyncio.get_running_loop()
    resumes = [len(p.of_type("resume", table)) for p in players]
    stopped = loop.time()
    n1.pause()
    figure: float | None = None
    try:
        if kind == "watch":
            await wait_until(lambda: all(p.url == n2.ws_url and p.connected for p in players),
                             timeout=pause, what="both players on the other node")
            figure = loop.time() - stopped
        await asyncio.sleep(max(0.0, stopped + pause - loop.time()))
    finally:
        n1.resume()
    resumed = loop.time()
    if kind == "stay":
        try:
            await wait_until(lambda: all(len(p.of_type("resume", table)) > r
                                         for p, r in zip(players, resumes, strict=True)),
                             timeout=TAKEOVER_BOUND + 30, what="resume at both players",
                             step=0.02)
            figure = loop.time() - resumed
        except AssertionError:
            figure = None  # not re-attached: the game goes on (or ends) without them
    try:
        end = str((await play_to_end(players, table, retry_for=TAKEOVER_BOUND + 30))["reason"])
    except RequestFailed as exc:  # the game ended without them (a forfeit they never saw)
        end = f"ended without the players ({exc.code})"
    for p in players:
        await Player.close(p)
    return {"pause_s": pause, "client": kind, "end": end,
            ("reattached_after_sigcont_s" if kind == "stay" else "reconnected_after_sigstop_s"):
            None if figure is None else round(figure, 2)}


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    prefix = f"bench-pause-{uuid.uuid4().hex[:8]}:"
    redis = aioredis.Redis.from_url(args.redis_url)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as logs:
        root = args.root.resolve()
        flags = {k: v for k, v in DEFAULTS.items() if has_flag("--" + k.replace("_", "-"), root)}
        cluster = Cluster(args.redis_url, prefix, Path(logs), root=root, **flags)
        try:
            await cluster.start_many(["p1", "p2"])
            for n, pause in enumerate(args.pauses):
                for kind in args.clients:
                    result = await one_pause(cluster, pause, kind, n)
                    results.append(result)
                    if not args.quiet:
                        print(result, file=sys.stderr)
        finally:
            await cluster.close()
            keys = [k async for k in redis.scan_iter(match=prefix + "*", count=1000)]
            for chunk in range(0, len(keys), 500):
                await redis.unlink(*keys[chunk:chunk + 500])
            await redis.aclose()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL",
                                                              "redis://127.0.0.1:6379/0"))
    parser.add_argument("--pauses", type=float, nargs="+", default=[35.0, 90.0])
    parser.add_argument("--clients", nargs="+", choices=("stay", "watch"),
                        default=["stay", "watch"])
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the tree whose server the nodes run (default: this one)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    results = asyncio.run(run(args))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(" ".join(f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

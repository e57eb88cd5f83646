"""Memory per socket under message floods: one ``python -m server`` node, guests' sockets each
sending one kind of message at the default message rate, the node's RSS sampled meanwhile.

Run from the repository root, with a Redis at ``--redis-url`` (a fresh key prefix, deleted
afterwards)::

    python3 bench/socket_floods.py                          # 64 sockets, every flood, 10 s each
    python3 bench/socket_floods.py --floods ack_events watch --seconds 15 --json
    python3 bench/socket_floods.py --root ../main           # another tree's server (before)

The node runs with the server's default limits except ``--max-sockets-per-address`` (every
socket here is on 127.0.0.1). ``--guests`` guests (at most 20: the guest burst of one address)
open ``--sockets`` sockets between them; each socket sends ``--rate`` messages per second (the
default rate limit is 30/s). The floods (``tests/server/flood_helpers.py``): ``ack_events``
(the most random 128-character ids one 16 KiB message carries), ``watch`` (random ids and 6
real tables), ``chat`` and ``report`` (at real tables), ``mute`` (random players), ``sync``
(random tables), ``ping`` (64-character ids). Each flood runs on fresh sockets; the figures:
the node's RSS growth over the flood per socket (KiB), and over its first and second half
(MiB): memory that levels off grows in the first half (buffers, caches) and hardly in the
second. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "server"))

import redis.asyncio as aioredis  # noqa: E402
from flood_helpers import FLOODS, Clients, flood, start_node  # noqa: E402


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    prefix = f"bench-floods-{uuid.uuid4().hex[:8]}:"
    root = Path(args.root).resolve()
    node = await start_node(args.redis_url, prefix, "--max-sockets-per-address", "1000",
                            root=root)
    results: list[dict[str, Any]] = []
    try:
        setup = Clients(node)
        tables = await setup.tables(6)
        per_guest = -(-args.sockets // args.guests)
        tokens = await setup.guests(args.guests)  # the same guests for every flood
        for kind in args.floods:
            clients = Clients(node)
            sockets = [await clients.open(tokens[i // per_guest]) for i in range(args.sockets)]
            result = await flood(node, sockets, kind, seconds=args.seconds, rate=args.rate,
                                 tables=tables)
            await clients.close()
            first, second = result.growth_kib
            row = {"flood": kind, "sockets": result.sockets, "sent": result.sent,
                   "rss_start_mib": round(result.samples[0][1] / 1024, 1),
                   "rss_end_mib": round(result.samples[-1][1] / 1024, 1),
                   "per_socket_kib": round(result.per_socket_kib, 1),
                   "first_half_mib": round(first / 1024, 2),
                   "second_half_mib": round(second / 1024, 2),
                   "answers": dict(result.answers.most_common(4)),
                   "closed": result.closed}
            results.append(row)
            if not args.json:
                print(f"{kind:11} {row['sent']:6} sent  RSS {row['rss_start_mib']:7.1f} -> "
                      f"{row['rss_end_mib']:7.1f} MiB  {row['per_socket_kib']:8.1f} KiB/socket"
                      f"  halves {row['first_half_mib']:+.2f} / {row['second_half_mib']:+.2f} "
                      f"MiB  {row['answers']}", flush=True)
            await asyncio.sleep(1.0)  # the node forgets the closed sockets
        await setup.close()
    finally:
        node.stop()
        redis = aioredis.Redis.from_url(args.redis_url)
        async for key in redis.scan_iter(match=prefix + "*", count=1000):
            await redis.delete(key)
        await redis.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL",
                                                              "redis://127.0.0.1:6379/0"))
    parser.add_argument("--root", default=str(ROOT), help="the tree whose server runs")
    parser.add_argument("--sockets", type=int, default=64)
    parser.add_argument("--guests", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=25.0, help="messages/s per socket")
    parser.add_argument("--floods", nargs="+", default=list(FLOODS), choices=FLOODS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    if args.json:
        print(json.dumps({"root": str(Path(args.root).resolve()), "sockets": args.sockets,
                          "rate": args.rate, "seconds": args.seconds, "floods": results},
                         indent=1))


if __name__ == "__main__":
    main()

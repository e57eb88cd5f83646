"""The pair limit's cost at game start: ``RatingStore.reserve_pair_game`` calls per second
and the Redis CPU per call (``INFO commandstats``: EVALSHA's ``usec_per_call``).

Run from the repository root:

    python3 bench/pair_limit.py                       # embedded redis-server
    python3 bench/pair_limit.py --redis-url redis://127.0.0.1:6379/0 --calls 20000

Phases: 1 task, then 50 concurrent tasks on one client, each over ``--pairs`` pairs (every
pair past its limit after a few calls, so both answers are measured). The fastest of
``--repeat`` runs is reported. Keys go under a fresh ``bench-<hex>:`` prefix, deleted after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from contextlib import ExitStack
from typing import Any

import redis.asyncio as aioredis

from rating_plugin.store import RatingStore
from server.embedded_redis import EmbeddedRedis


async def _evalsha_stats(client: aioredis.Redis) -> tuple[int, float]:
    stats: dict[str, Any] = await client.info("commandstats")
    entry = stats.get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    return int(entry["calls"]), float(entry["usec"])


async def _phase(client: aioredis.Redis, store: RatingStore, calls: int, tasks: int,
                 pairs: int, tag: str) -> tuple[float, float]:
    """(calls per second, Redis usec per call)."""
    before = await _evalsha_stats(client)
    per_task = calls // tasks

    async def worker(w: int) -> None:
        for n in range(per_task):
            pair = (w * per_task + n) % pairs
            await store.reserve_pair_game(f"{tag}-{w}-{n}", f"p{pair}a", f"p{pair}b",
                                          at=1.8e9 + n, limit=5, window=86400.0)

    started = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(tasks)))
    elapsed = time.perf_counter() - started
    after = await _evalsha_stats(client)
    done = per_task * tasks
    return done / elapsed, (after[1] - before[1]) / max(1, after[0] - before[0])


async def main(url: str, calls: int, pairs: int, repeat: int) -> None:
    client = aioredis.Redis.from_url(url)
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    store = RatingStore(client, prefix)
    try:
        await store.load_scripts()
        for tasks in (1, 50):
            runs = [await _phase(client, store, calls, tasks, pairs, f"r{r}t{tasks}")
                    for r in range(repeat)]
            rate, usec = max(runs)
            print(f"reserve_pair_game, {tasks:>2} task(s): {rate:,.0f} calls/s, "
                  f"Redis {usec:.1f} us/call (fastest of {repeat})")
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}*", count=1000)]
        for start in range(0, len(keys), 500):
            await client.unlink(*keys[start:start + 500])
        await client.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with ExitStack() as stack:
        url = args.redis_url or stack.enter_context(EmbeddedRedis()).url
        asyncio.run(main(url, args.calls, args.pairs, args.repeat))

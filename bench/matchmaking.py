"""Matchmaking: pairing passes over 10,000 waiting tickets, and a simulated arrival stream.

Run from the repository root, after ``python3 -m pip install -e .``:

    python3 bench/matchmaking.py                        # embedded redis-server, defaults
    python3 bench/matchmaking.py --redis-url redis://127.0.0.1:6379/0
    python3 bench/matchmaking.py --tickets 10000 --repeat 7 --hours 2

Phases:

* ``pure``: :func:`server.matchmaking.policy.plan_pass` over ``--tickets`` tickets (ratings
  ~ N(1500, 200), waits uniform in 0..60 s, one IPv4 address each) in the Competitive pool
  and in a FIBS pool with 10 % "new" players; and an adversarial pool where every ticket comes
  from one network (nothing may pair, every ticket spends its whole ``scan_limit``). Fastest
  and median of ``--repeat`` runs; pairs per second = pairs chosen / pass time.
* ``redis``: the same Competitive tickets queued through ``MatchmakingQueue.enqueue`` (50
  concurrent tasks, one client), then one ``run_pass``: lease, HGETALL, plan, claim scripts
  (256 pairs per call), release. Reported: enqueue rate, the HGETALL read alone, the whole
  pass, and pairs per second through Redis. Repeated ``--repeat`` times on a fresh queue.
* ``stream``: a simulated clock. Players arrive as a Poisson stream (``--rates`` per second),
  ratings ~ N(1500, 200), one pass per simulated second with the default window curve
  (±50, +10/s, cap ±400 at 35 s). Reported per rate: players paired, p50 / p99 / max wait,
  mean and p99 rating gap of the pairs, and the mean queue length.

With no ``--redis-url`` (and no ``REDIS_URL``) an embedded redis-server is started and stopped
again. Keys are written under a fresh ``bench-<hex>:`` prefix and deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import redis.asyncio as aioredis

from server.embedded_redis import EmbeddedRedis
from server.matchmaking import DEFAULT_SETTINGS, Ticket, plan_pass, pool_by_id
from server.store.queue import MatchmakingQueue

T0 = 1_700_000_000.0


def make_tickets(
    count: int, pool: str, *, seed: int, new_share: float = 0.0, one_network: bool = False
) -> list[Ticket]:
    rng = random.Random(seed)
    tickets = []
    for i in range(count):
        address = "10.9.9.9" if one_network else f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
        tickets.append(
            Ticket(
                player=f"p{i:06}",
                pool=pool,
                rating=round(rng.gauss(1500, 200), 2),
                queued_at=T0 - rng.uniform(0, 60),
                address=address,
                is_new=rng.random() < new_share,
                ticket_id=f"t{i}",
            )
        )
    return tickets


def timed(repeat: int, run: Callable[[], int]) -> tuple[list[float], list[float], int]:
    """Wall and CPU seconds of ``repeat`` runs, and the last run's result."""
    walls: list[float] = []
    cpus: list[float] = []
    result = 0
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return walls, cpus, result


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def bench_pure(count: int, repeat: int) -> None:
    print(f"\n## pure pairing pass, {count} waiting tickets ({repeat} runs)\n")
    print("| pool | pairs | wall fastest | wall median | CPU fastest | pairs/s (fastest) |")
    print("|---|---|---|---|---|---|")
    cases = [
        ("competitive", make_tickets(count, "competitive", seed=1)),
        ("match-3, 10 % new", make_tickets(count, "match-3", seed=2, new_share=0.1)),
        ("competitive, all one network", make_tickets(count, "competitive", seed=3,
                                                      one_network=True)),
    ]
    for label, tickets in cases:
        walls, cpus, pairs = timed(repeat, pass_over(tickets))
        fastest = min(walls)
        rate = pairs / fastest if pairs else 0.0
        print(f"| {label} | {pairs} | {ms(fastest)} | {ms(statistics.median(walls))} | "
              f"{ms(min(cpus))} | {rate:,.0f} |")


def pass_over(tickets: list[Ticket]) -> Callable[[], int]:
    pool = pool_by_id(tickets[0].pool)
    return lambda: len(plan_pass(pool, tickets, T0).pairs)


async def enqueue_all(queue: MatchmakingQueue, pending: Iterator[Ticket]) -> None:
    for t in pending:
        await queue.enqueue(t.player, t.pool, rating=t.rating, address=t.address,
                            now=t.queued_at)


async def redis_cpu(client: aioredis.Redis) -> float:
    info = await client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


async def bench_redis(url: str, count: int, repeat: int) -> None:
    print(f"\n## through Redis, {count} waiting tickets ({repeat} runs)\n")
    print("| run | enqueues/s (50 tasks) | read pool | whole run_pass | client CPU in pass "
          "| Redis CPU in pass | pairs | pairs/s |")
    print("|---|---|---|---|---|---|---|---|")
    tickets = make_tickets(count, "competitive", seed=1)
    client = aioredis.Redis.from_url(url)
    wholes: list[float] = []
    client_cpus: list[float] = []
    server_cpus: list[float] = []
    try:
        for run in range(repeat):
            prefix = f"bench-{uuid.uuid4().hex[:12]}:"
            queue = MatchmakingQueue(client, prefix=prefix, node="bench")
            await queue.load_scripts()
            pending = iter(tickets)
            started = time.perf_counter()
            await asyncio.gather(*(enqueue_all(queue, pending) for _ in range(50)))
            enqueue = time.perf_counter() - started
            started = time.perf_counter()
            await queue.tickets("competitive")
            read = time.perf_counter() - started
            server_cpu = await redis_cpu(client)
            started, cpu = time.perf_counter(), time.process_time()
            result = await queue.run_pass("competitive", now=T0)
            whole, cpu = time.perf_counter() - started, time.process_time() - cpu
            server_cpu = await redis_cpu(client) - server_cpu
            assert result is not None
            pairs = len(result.pairs)
            wholes.append(whole)
            client_cpus.append(cpu)
            server_cpus.append(server_cpu)
            print(f"| {run + 1} | {count / enqueue:,.0f} | {ms(read)} | {ms(whole)} | "
                  f"{ms(cpu)} | {ms(server_cpu)} | {pairs} | {pairs / whole:,.0f} |")
            keys = [k async for k in client.scan_iter(match=f"{prefix}*", count=1000)]
            if keys:
                await client.unlink(*keys)
    finally:
        await client.aclose()
    print(f"\nfastest whole pass {ms(min(wholes))} (median {ms(statistics.median(wholes))}); "
          f"least client CPU {ms(min(client_cpus))}, least Redis CPU {ms(min(server_cpus))}")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, int(share * len(ordered) + 0.5) - 1))
    return ordered[index]


def bench_stream(rates: list[float], hours: float, seed: int) -> None:
    duration = hours * 3600
    print(f"\n## simulated arrivals, {hours:g} h of simulated time, one pass per second\n")
    print("| arrivals/s | paired | expired | wait p50 | wait p99 | wait max (rating) | mean gap "
          "| gap p99 | mean queue | sim time |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    pool = pool_by_id("competitive")
    for rate in rates:
        rng = random.Random(seed)
        waiting: list[Ticket] = []
        waits: list[float] = []
        gaps: list[float] = []
        queue_sizes: list[int] = []
        longest = (0.0, 0.0)
        expired = 0
        next_arrival = rng.expovariate(rate)
        serial = 0
        started = time.perf_counter()
        second = 1.0
        while second <= duration:
            while next_arrival <= second:
                serial += 1
                waiting.append(
                    Ticket(f"p{serial}", "competitive", rng.gauss(1500, 200),
                           T0 + next_arrival, f"10.{serial >> 16 & 255}.{serial >> 8 & 255}."
                           f"{serial & 255}", ticket_id=str(serial))
                )
                next_arrival += rng.expovariate(rate)
            now = T0 + second
            plan = plan_pass(pool, waiting, now, DEFAULT_SETTINGS)
            if plan.pairs:
                taken: set[str] = set()
                for pair in plan.pairs:
                    gaps.append(pair.gap)
                    for t in (pair.first, pair.second):
                        waits.append(now - t.queued_at)
                        longest = max(longest, (now - t.queued_at, t.rating))
                        taken.add(t.player)
                waiting = [t for t in waiting if t.player not in taken]
            expired += len(plan.expired)
            gone = {t.player for t in (*plan.expired, *plan.rejected)}
            if gone:
                waiting = [t for t in waiting if t.player not in gone]
            queue_sizes.append(len(waiting))
            second += 1.0
        elapsed = time.perf_counter() - started
        print(
            f"| {rate:g} | {len(waits)} | {expired} | {percentile(waits, 0.5):.0f} s | "
            f"{percentile(waits, 0.99):.0f} s | {longest[0]:.0f} s ({longest[1]:.0f}) | "
            f"{statistics.fmean(gaps) if gaps else float('nan'):.1f} | "
            f"{percentile(gaps, 0.99):.0f} | {statistics.fmean(queue_sizes):.1f} | "
            f"{elapsed:.1f} s |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rates", default="0.2,1,5,20", help="arrivals per second, comma list")
    parser.add_argument("--hours", type=float, default=2.0, help="simulated time per rate")
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--skip", default="", help="phases to skip: pure,redis,stream")
    args = parser.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    print(f"# matchmaking benchmark — Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, {platform.machine()}")
    if "pure" not in skip:
        bench_pure(args.tickets, args.repeat)
    if "redis" not in skip:
        with ExitStack() as stack:
            url = args.redis_url or stack.enter_context(EmbeddedRedis()).url
            asyncio.run(bench_redis(url, args.tickets, args.repeat))
    if "stream" not in skip:
        bench_stream([float(r) for r in args.rates.split(",")], args.hours, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())

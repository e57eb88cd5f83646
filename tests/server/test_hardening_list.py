"""Hardening, the table list: it is an index kept as tables open and close, read one page
per Redis round trip, whatever the number of tables.

As the attack was made: 2,000 listed tables, a flood of list requests from many loops, and
another client's pings meanwhile. The machine is shared, so the assertion is on what does
not depend on its load (Redis commands per call, on a Redis of this test's own); the pings'
p99 is printed (run with ``-s``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import aiohttp
import pytest
import redis.asyncio as aioredis
from server_helpers import StartServer, connect, guest

from server.app import PERSISTENCE
from server.embedded_redis import EmbeddedRedis

TABLES = 2000


@pytest.fixture
def own_redis() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis() as redis:
        yield redis


async def _commands(redis: aioredis.Redis) -> tuple[int, int, int]:
    """(EVALSHA calls, HVALS + HGETALL calls, every command a client sent but connection
    set-up) so far."""
    stats = await redis.info("commandstats")
    for setup in ("cmdstat_client|setinfo", "cmdstat_client|setname", "cmdstat_hello",
                  "cmdstat_select", "cmdstat_info"):
        stats.pop(setup, None)
    def calls(name: str) -> int:
        entry = stats.get(f"cmdstat_{name}")
        return int(entry["calls"]) if entry else 0
    # Commands a script runs are counted too: lobby_page.lua's own (ZCARD, ZRANGE, HMGET)
    # are left out, so ``total`` is what clients sent.
    for inner in ("zcard", "zrange", "hmget"):
        stats.pop(f"cmdstat_{inner}", None)
    total = sum(int(v["calls"]) for v in stats.values())
    return calls("evalsha"), calls("hvals") + calls("hgetall"), total


async def test_two_thousand_tables_listed_one_round_trip_per_page(
    own_redis: EmbeddedRedis, start_server: StartServer
) -> None:
    # Nothing else runs scripts meanwhile (matchmaking passes and the node's heartbeat are
    # EVALSHAs too; on a loaded machine the window below outlasts a heartbeat period).
    server = await start_server(redis_url=own_redis.url, redis_check_interval=30.0,
                                matchmaking_pass_interval=3600.0, lease_renew=60.0,
                                lease_ttl=180.0)
    persistence = server.app[PERSISTENCE]
    base = time.time() - TABLES
    for i in range(TABLES):
        await persistence.list_table(f"t{i:05d}", {
            "table": f"t{i:05d}", "mode": "competitive" if i % 2 else "boosted",
            "status": "open" if i % 3 else "playing", "created_at": base + i,
            "players": ["x", None], "match_length": 0, "watchers": 0})
    redis = aioredis.Redis.from_url(own_redis.url)
    watcher = await connect(server, await guest(server))
    pinger = await connect(server, await guest(server))
    try:
        calls = 40
        await watcher.request({"type": "list_tables"})  # loads the script (NOSCRIPT once)
        before = await _commands(redis)
        async with aiohttp.ClientSession() as http:
            for i in range(calls // 2):
                async with http.get(f"{server.http}/api/tables?offset={i * 10}&limit=50") as r:
                    page = await r.json()
                    assert r.status == 200 and page["total"] == TABLES
                    assert len(page["tables"]) == 50
        for i in range(calls // 2):
            reply = await watcher.request({"type": "list_tables", "mode": "boosted",
                                           "offset": i})
            assert reply["total"] == TABLES // 2 and len(reply["tables"]) == 100
        after = await _commands(redis)
        evalsha, full_reads, total = (a - b for a, b in zip(after, before, strict=True))
        assert evalsha == calls and full_reads == 0, (evalsha, full_reads)
        assert total <= calls + 10  # a health check or a flush may fall in between
        # The order: open tables first, newest first.
        first = (await watcher.request({"type": "list_tables"}))["tables"]
        assert [t["status"] for t in first] == ["open"] * 100
        created = [t["created_at"] for t in first]
        assert created == sorted(created, reverse=True)

        # The flood: 16 loops of list requests, bounded, and another client's pings.
        async def flood(http: aiohttp.ClientSession) -> None:
            for i in range(25):
                async with http.get(f"{server.http}/api/tables?offset={i}") as r:
                    assert r.status == 200

        rtts: list[float] = []
        loop = asyncio.get_running_loop()
        async with aiohttp.ClientSession() as http:
            loops = [asyncio.ensure_future(flood(http)) for _ in range(16)]
            for _ in range(200):
                sent = loop.time()
                await pinger.request({"type": "ping"})
                rtts.append(loop.time() - sent)
                if all(task.done() for task in loops):
                    break
            await asyncio.gather(*loops)
        rtts.sort()
        p99 = rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))]
        print(f"ping during a listing flood over {TABLES} tables: {len(rtts)} pings, "
              f"median {rtts[len(rtts) // 2] * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms")
    finally:
        await redis.aclose()

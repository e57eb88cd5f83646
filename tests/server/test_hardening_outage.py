"""Hardening, Redis outage: a game whose clock runs out across an outage loses nothing and locks
nobody out.

The attack as it was made: Redis (a private redis-server of this test, append-only file on;
never the shared one) is stopped with SIGTERM while a game is on, for longer than the decision
clock, and started again a few seconds later. The table is held meanwhile (nothing runs out);
once Redis is back the clock goes on and runs out (one strike forfeits here): the game's end
is stored, then announced.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, cast

import msgpack
import redis.asyncio as aioredis
from hardening_helpers import PrivateRedis, http_json
from prometheus_client.parser import text_string_to_metric_families
from server_helpers import StartServer, connect, register, scripted, seat_two


async def _poll(url: str, status: int, tries: int = 100) -> None:
    for _ in range(tries):
        got, _headers, _body = await http_json("GET", url)
        if got == status:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{url} never answered {status}")


async def test_a_game_ending_during_a_redis_outage_is_stored_then_announced(
    start_server: StartServer, private_redis: PrivateRedis, key_prefix: str
) -> None:
    server = await start_server(dice_factory=scripted(3), redis_url=private_redis.url,
                                decision_time=1.5, max_strikes=1, redis_check_interval=0.1,
                                hold_allowance=0.5)
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, start = await seat_two(server, a, b)
    assert start["rating"]["rated"] is True, start["rating"]

    private_redis.sigterm()  # the outage starts; the table is held
    await _poll(server.http + "/healthz", 503)
    await _poll(server.http + "/readyz", 503)
    refused = await a.request({"type": "create_table", "mode": "competitive"})
    assert refused["type"] == "error" and refused["code"] == "unavailable", refused
    refused = await a.request({"type": "play_computer", "level": "random"})
    assert refused["type"] == "error" and refused["code"] == "unavailable", refused

    # The outage outlasts the clock (1.5 s): held, nobody runs out of time meanwhile.
    await asyncio.sleep(3.0)
    for client in (a, b):
        assert [m["table"] for m in client.of_type("held")] == [table]
        assert client.of_type("game_over") == [] and client.of_type("timeout") == []

    private_redis.start()  # same port, same data directory (the append-only file)
    over = await a.expect("game_over", timeout=20.0, table=table)
    await b.expect("game_over", timeout=20.0, table=table)
    assert over["reason"] == "timeout", over
    await a.expect("rating", timeout=20.0)
    await b.expect("rating", timeout=20.0)
    await _poll(server.http + "/readyz", 200)

    # The players can sit again at once, on the same sockets (their seats were released).
    for client in (a, b):
        created = None
        for _ in range(40):
            created = await client.request({"type": "create_table", "mode": "boosted"})
            if created["type"] == "table_created":
                break
            assert created.get("code") in ("already_seated", "unavailable"), created
            await asyncio.sleep(0.1)
        assert created is not None and created["type"] == "table_created", created
        await client.request({"type": "leave", "table": created["table"]})

    # The operator saw it: Redis is up again, nothing is left to settle.
    _status, _headers, text = await http_json("GET", server.http + "/metrics")
    samples = {s.name: s.value for f in text_string_to_metric_families(text)
               for s in f.samples if not s.labels}
    assert samples["table42_settlements_pending"] == 0
    assert samples["table42_redis_up"] == 1

    # The result and every event of the table's log are stored, without a gap.
    redis = aioredis.Redis.from_url(private_redis.url)
    try:
        results = await cast("Awaitable[list[bytes]]", redis.lrange(
            f"{key_prefix}{{t:{table}}}:results", 0, -1))
        # One result, also when a write was retried after Redis failed mid-way.
        assert len(results) == 1 and b'"reason":"timeout"' in results[0]
        raw = await cast("Awaitable[list[bytes]]", redis.lrange(
            f"{key_prefix}{{t:{table}}}:events", 0, -1))
        versions = {int(cast(dict[str, Any], msgpack.unpackb(e))["v"]) for e in raw}
        assert versions == set(range(1, max(versions) + 1)), sorted(versions)
        assert max(versions) >= over["v"]
        seats = [await redis.get(f"{key_prefix}{{p:{p}}}:seat") for p in ("alice", "bob")]
        assert seats == [None, None]
    finally:
        await redis.flushall()
        await redis.aclose()

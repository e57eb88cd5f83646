"""A table holds while Redis is away, below the socket (``table_bench.py``) and in virtual
time: the real table over a private redis-server of the test's own, killed and started again
from its append-only file. The socket tests (tests/server/test_hold.py) keep the protocol:
``held``, the refusals, ``resumed``, a socket closed meanwhile."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from hardening_helpers import PrivateRedis
from table_bench import TableBench

from server.client import default_decision
from server.lobby.table import Table


@pytest.fixture
async def private_store(private_redis: PrivateRedis) -> AsyncIterator[aioredis.Redis]:
    """A client of the test's private redis-server that gives up at once while it is away."""
    client = aioredis.Redis.from_url(private_redis.url, socket_connect_timeout=0.5,
                                     socket_timeout=0.5)
    try:
        yield client
    finally:
        await client.aclose()


async def _store_back(bench: TableBench, table: Table, private_redis: PrivateRedis) -> None:
    """Redis started again from its file: the node's next check finds it, and the table
    resumes (as the lobby does on the store's health)."""
    private_redis.start()
    # The connections to the server that was killed are gone: the client opens new ones.
    await bench.persistence.redis.connection_pool.disconnect()
    await bench.persistence.check_once()
    assert bench.persistence.redis_up
    table.resume()
    await bench.settle()


async def test_a_clock_running_out_before_the_outage_is_noticed_costs_nothing(
        private_redis: PrivateRedis, private_store: aioredis.Redis, key_prefix: str) -> None:
    """The clock runs out after Redis went away and before a health check noticed (one
    strike forfeits here): the table reads the store before charging the player, finds it
    away and holds instead."""
    bench = await TableBench.open(private_store, key_prefix, max_strikes=1)
    table = await bench.table("unnoticed")
    private_redis.kill()
    assert bench.persistence.redis_up  # not noticed yet
    await bench.advance(bench.settings.decision_time + 1.0)
    assert not bench.persistence.redis_up
    assert bench.sent("alice", "held") and bench.sent("bob", "held")
    assert bench.sent("alice", "timeout") == []
    await _store_back(bench, table, private_redis)
    assert bench.sent("alice", "resumed")
    assert table.state()["clock"]["strikes"] == [0, 0]
    side = table.state()["game"]["to_act"]
    players = ("alice", "bob")
    await bench.act(table, players[side], {"type": "resign", "kind": "single"})
    await bench.act(table, players[1 - side], {"type": "accept_resign"})
    [over] = bench.sent("alice", "game_over")
    assert over["reason"] == "resign"
    assert bench.sent("alice", "timeout") == bench.sent("bob", "timeout") == []


async def test_redis_away_longer_than_the_clock_costs_nobody_a_strike(
        private_redis: PrivateRedis, private_store: aioredis.Redis, key_prefix: str) -> None:
    """Redis killed mid-game and started again from its file after two and a half decision
    clocks: nobody is charged, the game plays on to its end and its result is stored."""
    bench = await TableBench.open(private_store, key_prefix)
    table = await bench.table("away")
    for _ in range(8):  # a few moves, stored
        state: dict[str, Any] = table.state()
        seat = state["seats"][state["game"]["to_act"]]["player"]
        await bench.act(table, seat, default_decision(state["game"]))
    private_redis.kill()
    await bench.persistence.check_once()
    assert not bench.persistence.redis_up
    table.hold()
    [held] = bench.sent("alice", "held")
    assert held["retry_after"] >= 1
    await bench.advance(2.5 * bench.settings.decision_time)
    await _store_back(bench, table, private_redis)
    [resumed] = bench.sent("bob", "resumed")
    assert resumed["until"] > resumed["since"]
    over = await bench.play_out(table)
    assert over["reason"] == "normal"
    assert bench.sent("alice", "timeout") == bench.sent("bob", "timeout") == []
    assert await bench.persistence.has_result("away", over["game_id"])

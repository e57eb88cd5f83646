"""The node's periodic reads sent together (server/store/read_batch.py) on a real Redis: the
reads asked in one pass of the loop leave in one round trip, each caller gets its own reply
or its own error, a read alone goes as it is, and a cluster client batches too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from server.config import Settings
from server.store.keys import Keys
from server.store.persistence import Persistence
from server.store.read_batch import ReadBatch, reads


async def test_reads_asked_together_leave_in_one_round_trip(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    k = key_prefix
    await redis_client.set(f"{k}id", "abc")
    await redis_client.hset(f"{k}h", mapping={"a": "1", "b": "2"})  # type: ignore[misc]
    await redis_client.sadd(f"{k}s", "x", "y")  # type: ignore[misc]
    await redis_client.zadd(f"{k}z", {"n1": 5, "n2": 7})
    batch = ReadBatch(redis_client)
    got = await asyncio.gather(batch.get(f"{k}id"), batch.hlen(f"{k}h"),
                               batch.smembers(f"{k}s"), batch.zrange_with_scores(f"{k}z"),
                               batch.get(f"{k}missing"))
    assert batch.round_trips == 1
    assert list(got) == [b"abc", 2, {b"x", b"y"}, [(b"n1", 5.0), (b"n2", 7.0)], None]
    assert await batch.hlen(f"{k}h") == 2  # alone: a plain command
    assert batch.round_trips == 2


async def test_each_caller_gets_its_own_error(redis_client: aioredis.Redis,
                                             key_prefix: str) -> None:
    await redis_client.set(f"{key_prefix}str", "v")
    batch = reads(redis_client)
    assert reads(redis_client) is batch  # one batch per client
    wrong = batch.hlen(f"{key_prefix}str")  # WRONGTYPE for this read only
    right = batch.get(f"{key_prefix}str")
    with pytest.raises(ResponseError):
        await wrong
    assert await right == b"v"


async def test_a_caller_that_stops_waiting_leaves_the_others(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    await redis_client.set(f"{key_prefix}a", "1")
    batch = ReadBatch(redis_client)
    gone = batch.get(f"{key_prefix}a")
    kept = batch.get(f"{key_prefix}a")
    gone.cancel()  # as a caller's timeout does
    assert await kept == b"1"
    assert gone.cancelled() and batch.round_trips == 1


async def test_redis_away_fails_every_read_of_the_batch() -> None:
    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    batch = ReadBatch(client)
    results = await asyncio.gather(batch.get("a"), batch.hlen("b"), return_exceptions=True)
    assert all(isinstance(r, OSError | ConnectionError) or "Connect" in type(r).__name__
               for r in results), results
    await client.aclose()


async def test_a_cluster_client_batches_its_reads(
        redis_cluster: aioredis.RedisCluster, key_prefix: str) -> None:
    await redis_cluster.set(f"{key_prefix}one", "1")
    await redis_cluster.sadd(f"{key_prefix}two", "m")  # type: ignore[misc]
    batch = ReadBatch(redis_cluster)
    got = await asyncio.gather(batch.get(f"{key_prefix}one"), batch.smembers(f"{key_prefix}two"),
                               batch.hlen(f"{key_prefix}three"))
    assert list(got) == [b"1", {b"m"}, 0] and batch.round_trips == 1


async def test_a_failed_batched_check_is_asked_again_alone_before_redis_counts_as_away(
        redis_client: aioredis.Redis, make_settings: Callable[..., Settings],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Redis check's read failing with its batch (or answered too late for a busy loop)
    is not an outage: the check asks once more on its own before every table holds."""
    settings = make_settings()
    store = Persistence(redis_client, Keys(settings.key_prefix), settings)
    await store.claim_store()
    batch = reads(redis_client)

    def failing(key: str) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_exception(ConnectionError("the batch's connection broke"))
        return future

    monkeypatch.setattr(batch, "get", failing)
    await store.check_once()
    assert store.redis_up  # asked alone, Redis answered
    await redis_client.connection_pool.disconnect()
    monkeypatch.setattr(store.redis, "get", failing)
    await store.check_once()
    assert not store.redis_up  # alone too: away

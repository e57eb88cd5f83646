"""Fixtures for the failover tests: node processes on loopback sharing the test's Redis.

``cluster`` is a :class:`nodes.Cluster` under the test's key prefix (the ``redis_client``
fixture deletes every key under it afterwards); every node it started is killed at the end,
and the nodes' logs are printed (pytest shows them when the test fails).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from nodes import Cluster


@pytest.fixture
async def cluster(
    redis_url: str, key_prefix: str, redis_client: aioredis.Redis, tmp_path: Path
) -> AsyncIterator[Cluster]:
    del redis_client  # requested so that its cleanup (the prefix's keys) runs after ours
    nodes = Cluster(redis_url, key_prefix, tmp_path)
    try:
        yield nodes
    finally:
        await nodes.close()
        print(nodes.logs())

"""Fixtures for the rating store tests: a store under the test's own key prefix."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from rating_plugin.store import RatingStore


@pytest.fixture
def store(redis_client: aioredis.Redis, key_prefix: str) -> RatingStore:
    return RatingStore(redis_client, prefix=key_prefix)

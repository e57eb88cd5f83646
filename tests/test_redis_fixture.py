from __future__ import annotations

import redis.asyncio as aioredis


async def test_fixture_gives_a_real_redis(redis_client: aioredis.Redis, key_prefix: str) -> None:
    assert await redis_client.ping()
    await redis_client.set(f"{key_prefix}{{probe}}:x", "1")
    info = await redis_client.info("server")
    assert int(str(info["redis_version"]).split(".")[0]) >= 6
    assert await redis_client.get(f"{key_prefix}{{probe}}:x") == b"1"

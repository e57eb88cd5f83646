"""``redis_client(url)``: the Redis client of a node (and of the admin commands).

``redis://``, ``rediss://``, ``unix://``: one Redis server, through a bounded connection pool.
``redis+cluster://host:port/0``: a Redis Cluster, ``host:port`` being any of its nodes (the
others are discovered). Every key the server writes carries a hash tag, and every script and
multi-key command stays in one slot (docs/deployment.md, "Redis Cluster"); the client routes
each command to its slot's node. Pub/sub is not keyed: a message published on any node of a
cluster reaches the subscribers of every node, so subscriptions and ``PUBLISH`` use a plain
connection to the node named in the URL (redis-py 5.2's asyncio cluster client has neither).
"""

from __future__ import annotations

from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub

CLUSTER_SCHEME = "redis+cluster://"
REDIS_MAX_CONNECTIONS = 512
"""Redis connections one node keeps at most (the node bus's subscription holds one). A command
holds its connection until the event loop reads the reply, which under full load is as long
as a move's round trip, so a few hundred can be busy at once with a thousand games."""


class ClusterRedis(aioredis.RedisCluster):
    """redis.asyncio's cluster client, with pub/sub over the seed node (see the module)."""

    seed: aioredis.Redis

    def pubsub(self, **kwargs: Any) -> PubSub:
        return self.seed.pubsub(**kwargs)

    async def publish(self, channel: str | bytes, message: str | bytes) -> int:
        return int(await self.seed.publish(channel, message))

    async def aclose(self) -> None:
        await super().aclose()
        await self.seed.aclose()


def redis_client(url: str) -> aioredis.Redis:
    """A client for ``url`` (typed as ``Redis`` for a cluster too: the server's commands are
    the same; :class:`ClusterRedis` supplies what the cluster client lacks)."""
    if url.startswith(CLUSTER_SCHEME):
        plain = "redis://" + url[len(CLUSTER_SCHEME):]
        cluster = cast(ClusterRedis, ClusterRedis.from_url(
            plain, max_connections=REDIS_MAX_CONNECTIONS, socket_connect_timeout=5.0))
        cluster.seed = aioredis.Redis.from_url(plain, socket_connect_timeout=5.0)
        return cast(aioredis.Redis, cluster)
    # A bounded pool: a burst (a thousand games starting at once) waits for a connection
    # instead of opening one per waiting command and keeping them all for good.
    return aioredis.Redis.from_pool(aioredis.BlockingConnectionPool.from_url(
        url, max_connections=REDIS_MAX_CONNECTIONS, timeout=20,
        socket_connect_timeout=5.0, health_check_interval=30,
    ))

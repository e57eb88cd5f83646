"""``redis_client(url)``: the Redis client of a node (and of the admin commands).

``redis://``, ``rediss://``, ``unix://``: one Redis server, through a bounded connection pool.
``redis+cluster://host:port/0``: a Redis Cluster, ``host:port`` being any of its nodes (the
others are discovered). Every key the server writes carries a hash tag, and every script and
multi-key command stays in one slot (docs/deployment.md, "Redis Cluster"); the client routes
each command to its slot's node. Pub/sub is not keyed: a message published on any node of a
cluster reaches the subscribers of every node, so subscriptions and ``PUBLISH`` use a plain
connection to one node (redis-py 5.2's asyncio cluster client has neither): the one named in
the URL first, and when it fails, any live node of the cluster's topology
(:meth:`ClusterRedis.reseed`, asked by the node bus, ``server/cluster/bus.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

CLUSTER_SCHEME = "redis+cluster://"
REDIS_MAX_CONNECTIONS = 512
"""Redis connections one node keeps at most (the node bus's subscription holds one). A command
holds its connection until the event loop reads the reply, which under full load is as long
as a move's round trip, so a few hundred can be busy at once with a thousand games."""


RESEED_TIMEOUT = 1.0
"""Seconds a node of the cluster has to answer ``PING`` to become the pub/sub node."""
PEER_TIMEOUT = 5.0
"""Seconds a TCP connection to Redis may go on with its data unacknowledged before the kernel
fails it (``TCP_USER_TIMEOUT``); an idle one is probed after as long (keep-alive, every
second, three probes). A Redis whose host is gone or cut off (no ``RST``, no ``FIN``) would
otherwise hold every command sent to it until the kernel gives up, a quarter of an hour
later: with this the command fails as a refused one does, the node holds its tables, and a
cluster client finds the master that took over. Nothing is timed per command (a read timeout
costs a timer per reply and a task per send: about 13 µs a command). A Redis process that is
stopped on a live host still has its kernel acknowledge, and is not caught this way."""
TCP_OPTIONS: dict[int, int] = {
    getattr(socket, "TCP_USER_TIMEOUT", 18): int(PEER_TIMEOUT * 1000),
    socket.TCP_KEEPIDLE: int(PEER_TIMEOUT),
    socket.TCP_KEEPINTVL: 1,
    socket.TCP_KEEPCNT: 3,
} if sys.platform == "linux" else {}
"""The Linux socket options of :data:`PEER_TIMEOUT` (elsewhere, the system's defaults)."""


def _tcp(url: str) -> dict[str, Any]:
    """The connection options of ``url``: the keep-alive and peer timeout of a TCP one."""
    if url.startswith("unix://") or not TCP_OPTIONS:
        return {}
    return {"socket_keepalive": True, "socket_keepalive_options": TCP_OPTIONS}


class ClusterRedis(aioredis.RedisCluster):
    """redis.asyncio's cluster client, with pub/sub over one live node (see the module)."""

    seed: aioredis.Redis
    _reseed_missed: bool

    async def reseed(self) -> str | None:
        """Move pub/sub to a live node of the cluster (the pub/sub node failed): the nodes
        of the client's topology, masters and replicas, are tried in turn, the failed node
        last (the topology is read again first when none answered last time). Returns the
        new node's address, or None when no node answered (the old one is kept)."""
        old = self.seed.connection_pool.connection_kwargs
        failed = f"{old.get('host')}:{old.get('port')}"
        if getattr(self, "_reseed_missed", False):
            with contextlib.suppress(RedisError, OSError):
                await self.nodes_manager.initialize()
        names = sorted({node.name for node in self.get_nodes()},
                       key=lambda name: (name == failed, name))
        self._reseed_missed = True
        # The URL's credentials, database and timeouts go with it to the new node.
        kept = {k: old[k] for k in ("username", "password", "db", "socket_keepalive",
                                    "socket_keepalive_options") if old.get(k) is not None}
        for name in names:
            host, _, port = name.rpartition(":")
            client = aioredis.Redis(host=host, port=int(port),
                                    socket_connect_timeout=RESEED_TIMEOUT, **kept)
            try:
                async with asyncio.timeout(RESEED_TIMEOUT):
                    await client.ping()
            except (RedisError, OSError, TimeoutError):
                await client.aclose()
                continue
            self._reseed_missed = False
            previous, self.seed = self.seed, client
            with contextlib.suppress(RedisError, OSError):
                await previous.aclose()
            if name != failed:
                log.warning("pub/sub moved from %s to %s", failed, name)
            return name
        return None

    def pubsub(self, **kwargs: Any) -> PubSub:
        return self.seed.pubsub(**kwargs)

    async def publish(self, channel: str | bytes, message: str | bytes) -> int:
        return int(await self.seed.publish(channel, message))

    # aclose() is redis-py's own, which the cluster client also calls to reset itself after
    # a node's error (a failover): the pub/sub node's connections must outlive that, so
    # they are closed apart, by their user (the node bus, when it stops).

    async def close_pubsub(self) -> None:
        """Close the connections to the pub/sub node (they open again when used)."""
        await self.seed.aclose()


def redis_client(url: str) -> aioredis.Redis:
    """A client for ``url`` (typed as ``Redis`` for a cluster too: the server's commands are
    the same; :class:`ClusterRedis` supplies what the cluster client lacks); a TCP
    connection fails within :data:`PEER_TIMEOUT` of its peer going silent."""
    if url.startswith(CLUSTER_SCHEME):
        plain = "redis://" + url[len(CLUSTER_SCHEME):]
        cluster = cast(ClusterRedis, ClusterRedis.from_url(
            plain, max_connections=REDIS_MAX_CONNECTIONS, socket_connect_timeout=5.0,
            **_tcp(plain)))
        cluster.seed = aioredis.Redis.from_url(plain, socket_connect_timeout=5.0, **_tcp(plain))
        return cast(aioredis.Redis, cluster)
    # A bounded pool: a burst (a thousand games starting at once) waits for a connection
    # instead of opening one per waiting command and keeping them all for good.
    return aioredis.Redis.from_pool(aioredis.BlockingConnectionPool.from_url(
        url, max_connections=REDIS_MAX_CONNECTIONS, timeout=20,
        socket_connect_timeout=5.0, health_check_interval=30, **_tcp(url),
    ))

"""Replicated before announced: ``WAIT`` on a write's master where the deployment has replicas.

A master acknowledges a write before its replicas have it; if it dies then, the replica
promoted in its place has never seen it. So what players are told (a table's events, a
result, a rating) is announced only once ``replica_wait`` replicas (at most the master's
own) acknowledged it: ``WAIT <n> <replica_wait_timeout ms>`` on the connection that wrote
(the write-behind flush adds it to its batch: one command more, no round trip more), or on
every master at the end of a game (:meth:`Replicas.replicated`). A master with no replica
(one Redis, a cluster without replicas, a replica promoted and alone) is not asked.

Which masters have replicas is read with ``INFO replication`` (its online replicas) on each
master, at most every :data:`REPLICA_CHECK` seconds and again at once after a ``WAIT`` fell
short (a replica gone); the flush only reads the cached counts. So for up to that long after
a failover, or after a replica joins, a master's writes may not wait for a replica it has
(the node's tick counts them too, so a quiet node's counts stay fresh). A ``WAIT`` that falls
short raises :class:`ReplicaTimeout`, a ``RedisError``: the write is kept and tried again as
during an outage (the scripts skip what is stored already), so the table holds instead of
announcing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

REPLICA_CHECK = 1.0
"""Seconds the replica counts of the masters are reused before they are read again (one
``INFO replication`` per master: a replica that joins is waited for within this)."""
SINGLE = ""
"""The name of the one master of a deployment that is not a cluster."""


class ReplicaTimeout(RedisError):
    """Fewer replicas than asked acknowledged a write in time: it is not announced."""


def _online(info: Any) -> int:
    """Online replicas in an ``INFO replication`` answer (parsed or raw)."""
    if isinstance(info, bytes):
        info = info.decode()
    if isinstance(info, str):
        return sum(1 for line in info.splitlines()
                   if line.startswith("slave") and "state=online" in line)
    if isinstance(info, dict):
        return sum(1 for key, value in info.items()
                   if str(key).startswith("slave") and isinstance(value, dict)
                   and value.get("state") == "online")
    return 0


class Replicas:
    """The replica counts of a deployment's masters, and the ``WAIT`` each write needs.
    ``wait``: replicas a write waits for (0: never waits); ``timeout``: seconds."""

    def __init__(self, redis: aioredis.Redis, *, wait: int, timeout: float) -> None:
        self.redis = redis
        self.want = wait
        self.timeout_ms = max(1, int(timeout * 1000))
        self.cluster = isinstance(redis, aioredis.RedisCluster)
        self.counts: dict[str, int] = {}
        self.checked_at = -float("inf")
        self._checking: asyncio.Task[None] | None = None
        self.waits = 0  # WAIT commands sent (the bench counts them)
        self.short = 0  # WAITs that fell short

    def needed(self, master: str = SINGLE) -> int:
        """Replicas a write on ``master`` waits for (0: no WAIT)."""
        return min(self.want, self.counts.get(master, 0))

    @property
    def any(self) -> bool:
        return self.want > 0 and any(self.counts.values())

    async def fresh(self) -> None:
        """Read the counts again when they are older than :data:`REPLICA_CHECK` (one read
        at a time; a failed read keeps the old ones)."""
        if self.want <= 0 or time.monotonic() - self.checked_at < REPLICA_CHECK:
            return
        if self._checking is None or self._checking.done():
            self._checking = asyncio.ensure_future(self._check())
        await asyncio.shield(self._checking)

    def stale(self) -> None:
        """Read the counts again before the next write (a WAIT fell short)."""
        self.checked_at = -float("inf")

    async def _check(self) -> None:
        counts: dict[str, int] = {}
        if self.cluster:
            # The client's topology (redis-py reads it again after a failover's errors and
            # redirections); a master that does not answer counts none (it is failing).
            cluster: Any = self.redis
            for node in cluster.get_primaries():
                try:
                    counts[node.name] = _online(
                        await node.execute_command("INFO", "replication"))
                except (RedisError, OSError):
                    counts[node.name] = 0
        else:
            try:
                counts[SINGLE] = _online(await self.redis.info("replication"))
            except (RedisError, OSError) as exc:
                log.warning("replicas: counting them failed (kept): %s", exc)
                return
        if counts != self.counts:
            (log.warning if self.counts else log.info)(
                "replicas per master: %s (writes wait for %d)", counts or "none", self.want)
        self.counts = counts
        self.checked_at = time.monotonic()

    def master_of(self, key: bytes | str) -> str:
        """The name of the master holding ``key`` (:data:`SINGLE` outside a cluster)."""
        if not self.cluster:
            return SINGLE
        cluster: Any = self.redis
        return str(cluster.nodes_manager.get_node_from_slot(cluster.keyslot(key)).name)

    def check(self, acks: Sequence[tuple[str, Any]]) -> None:
        """Raise :class:`ReplicaTimeout` when a ``WAIT`` answer (``master``, replicas that
        acknowledged) is short of what that master needed."""
        for master, acked in acks:
            needed = self.needed(master)
            if int(acked) < needed:
                self.short += 1
                self.stale()
                raise ReplicaTimeout(f"{acked} of {needed} replicas of {master or 'Redis'} "
                                     f"acknowledged within {self.timeout_ms} ms")

    async def replicated(self, keys: Sequence[str] | None = None) -> None:
        """Wait until what was written so far is on the replicas of every master that has
        some (a ``PING`` and a ``WAIT`` on each, at once), or of the masters of ``keys``
        only. Raises :class:`ReplicaTimeout` (or the ``RedisError`` of a master away)."""
        await self.fresh()
        if not self.any:
            return
        if not self.cluster:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.ping()
                pipe.execute_command("WAIT", self.needed(), self.timeout_ms)
                replies = await pipe.execute()
            self.waits += 1
            self.check([(SINGLE, replies[-1])])
            return
        cluster: Any = self.redis
        masters = [node for node in cluster.get_primaries() if self.needed(node.name)]
        if keys is not None:
            wanted = {self.master_of(key) for key in keys}
            masters = [node for node in masters if node.name in wanted]

        async def one(node: Any) -> tuple[str, Any]:
            async with cluster.pipeline(transaction=False) as pipe:
                pipe.execute_command("PING", target_nodes=node)
                pipe.execute_command("WAIT", self.needed(node.name), self.timeout_ms,
                                     target_nodes=node)
                replies = await pipe.execute()
            return node.name, replies[-1]

        acks = await asyncio.gather(*(one(node) for node in masters))
        self.waits += len(acks)
        self.check(acks)

"""Redis commands packed as RESP by hand and sent in one write: the write-behind flush's
batch (a part of :class:`server.store.persistence.Persistence`; see docs/server.md)."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis

from server.store.replicas import Replicas


class Batch:
    """Redis commands written as RESP by hand, sent in one write and answered in order.

    The write-behind flush sends hundreds of small commands at a time; redis-py's pipeline
    costs several microseconds of Python per command to pack and parse, this about a third of
    it. Any failure drops the connection (unread replies must not reach the next user) and
    raises, like a pipeline would.
    """

    __slots__ = ("commands", "count", "keep", "parts", "wait_ms", "waits")

    def __init__(self, keep: list[Any] | None = None, *, cluster: bool = False) -> None:
        # The arguments as well, only for a cluster (sent through redis-py's pipeline).
        self.commands: list[tuple[bytes, ...]] | None = [] if cluster else None
        self.parts: list[bytes] = []
        self.count = 0
        # With ``keep`` (a list of at most one connection), the connection stays there from
        # one execute to the next instead of going back to the pool (whose check-out and
        # check-in cost about as much as the write): the write-behind flusher's, which
        # executes once per move at a human pace.
        self.keep = keep
        # WAITs sent last, one per master written (a cluster's: with its node).
        self.waits: list[tuple[str, Any, int]] = []
        self.wait_ms = 0

    def add(self, *args: bytes) -> None:
        if self.commands is not None:
            self.commands.append(args)
        parts = self.parts
        parts.append(b"*%d\r\n" % len(args))
        for arg in args:
            parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
        self.count += 1

    def add_headed(self, head: tuple[bytes, ...], encoded: bytes, *tail: bytes) -> None:
        """Like ``add(*head, *tail)``, with ``encoded`` the RESP of ``head`` made beforehand."""
        if self.commands is not None:
            self.commands.append(head + tail)
        parts = self.parts
        parts.append(b"*%d\r\n" % (len(head) + len(tail)))
        parts.append(encoded)
        for arg in tail:
            parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
        self.count += 1

    def wait_for(self, replicas: Replicas) -> list[str]:
        """End the batch with a ``WAIT`` on each master it writes that has replicas, on the
        connection of its writes (``server/store/replicas.py``); their masters, in the
        order of the last replies."""
        if not replicas.any:
            return []
        self.wait_ms = replicas.timeout_ms
        if self.commands is None:
            needed = replicas.needed()
            if needed:
                self.add(b"WAIT", b"%d" % needed, b"%d" % replicas.timeout_ms)
                self.waits.append(("", None, needed))
            return [name for name, _node, _n in self.waits]
        cluster: Any = replicas.redis
        seen: set[str] = set()
        for command in self.commands:
            key = command[3] if command[0] in (b"EVALSHA", b"EVAL") else command[1]
            node = cluster.nodes_manager.get_node_from_slot(cluster.keyslot(key))
            needed = replicas.needed(node.name)
            if needed and node.name not in seen:
                seen.add(node.name)
                self.waits.append((node.name, node, needed))
        return [name for name, _node, _n in self.waits]

    async def execute(self, redis: aioredis.Redis) -> list[Any]:
        if isinstance(redis, aioredis.RedisCluster):
            # A cluster: redis-py's cluster pipeline sends each command to its slot's node
            # (one round trip per node, on one connection: a WAIT follows its node's
            # writes); the replies come back in order.
            assert self.commands is not None, "a batch for a cluster is made with cluster=True"
            async with redis.pipeline(transaction=False) as pipe:
                for command in self.commands:
                    pipe.execute_command(command[0].decode(), *command[1:])
                for _name, node, needed in self.waits:
                    pipe.execute_command("WAIT", needed, self.wait_ms, target_nodes=node)
                return list(await pipe.execute())
        pool: Any = redis.connection_pool  # get_connection is not typed in redis-py 5.2
        keep = self.keep
        conn = keep[0] if keep else await pool.get_connection("_")
        try:
            await conn.send_packed_command(self.parts)  # pings first only if long idle
            replies = [await conn.read_response(disable_decoding=True)
                       for _ in range(self.count)]
        except BaseException:
            if keep:
                keep.clear()
            await conn.disconnect(nowait=True)
            await pool.release(conn)
            raise
        if keep is None:
            await pool.release(conn)
        elif not keep:
            keep.append(conn)
        return replies

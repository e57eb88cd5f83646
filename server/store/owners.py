"""Table ownership in Redis: each table's owner record (claimed with an epoch, released,
read), each node's table set, and the node set with its heartbeats. A part of
:class:`server.store.persistence.Persistence`, which supplies the client, the keys, the write
buffer (whose epochs fence every write) and the scripts. See ``server/lobby/ownership.py``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript

from server.config import Settings
from server.store.keys import Keys
from server.store.read_batch import reads
from server.store.results import _aw
from server.store.write_buffer import FENCED_OUT, WriteBuffer


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


@dataclass(frozen=True, slots=True)
class Lease:
    """A table's owner record as stored: its owner node and epoch; ``free`` once handed over
    (any live node may claim it), ``done`` once the table finished (never claimed again)."""

    node: str
    epoch: int
    done: bool
    free: bool = False


LEASE_FIELDS = ["node", "epoch", "done", "free"]


def _lease(row: list[Any]) -> Lease | None:
    node, epoch, done, free = row
    if epoch is None:
        return None
    return Lease(_text(node or b""), int(epoch), _text(done or b"") == "1",
                 _text(free or b"") == "1")


class OwnerRecords:
    """Owner records, node table sets and the node set."""

    redis: aioredis.Redis
    keys: Keys
    _settings: Settings
    buffer: WriteBuffer
    clock_offset: float
    _lease_claim: AsyncScript
    _lease_release: AsyncScript
    _node_heartbeat: AsyncScript

    async def claim(self, table: str, node: str, *, new: bool, epoch: int = 0
                    ) -> tuple[int, str]:
        """Claim ``table``'s owner record for ``node``: ``new`` for a table just made here
        (no record may exist yet), else a takeover of the record as read (``epoch``: the
        epoch read just before; the caller judged its owner dead or the table handed over).
        Returns (the new epoch, the previous owner node): epoch 0 when not claimed. The table enters
        ``node``'s table set first (so a node that dies right after the claim leaves it where
        the scan looks) and, once taken over, leaves the previous owner's; the caller
        :meth:`adopt`\\ s the epoch."""
        keys = self.keys
        await _aw(self.redis.sadd(keys.node_tables(node), table))
        reply = await self._lease_claim(
            keys=[keys.table_lease(table)],
            args=[node, self.buffer.log_ttl_ms, "new" if new else "takeover", epoch],
        )
        claimed, previous = int(reply[0]), _text(reply[1])
        if not claimed:
            await _aw(self.redis.srem(keys.node_tables(node), table))
        elif previous and previous != node:
            await _aw(self.redis.srem(keys.node_tables(previous), table))
        return claimed, previous

    async def heartbeat(self, node: str, node_ttl: float, online: int | None = None) -> bool:
        """Say ``node`` is alive for ``node_ttl`` seconds, with ``online``, the players
        connected to it (``GET /api/online``), in one script call, whatever the number of
        tables. True when the node's time had run out before this call: its peers
        may have taken it for dead and claimed some of its tables (see :meth:`lost_tables`).
        Keeps the offset of this node's clock from Redis's (:meth:`nodes` is in local time)."""
        now_ms, previous = (int(x) for x in await self._node_heartbeat(
            keys=[self.keys.nodes, self.keys.online],
            args=[node, int(node_ttl * 1000), "" if online is None else online]))
        self.clock_offset = now_ms / 1000 - time.time()
        return 0 <= previous < now_ms

    async def lost_tables(self, node: str) -> list[str]:
        """The tables this node writes as their owner whose record names another owner (or
        epoch), is done by someone else, or is gone: read once each, in one pipeline (after
        this node was taken for dead). The caller lets them go (their writes would be
        refused anyway)."""
        owned = [(t, e) for t, e in self.buffer.epochs.items() if e != FENCED_OUT]
        if not owned:
            return []
        leases = await self.leases([t for t, _ in owned])
        lost, kept = [], []
        for table, epoch in owned:
            lease = leases.get(table)
            if lease is None or lease.node != node or lease.epoch != epoch:
                if self.buffer.epochs.get(table) == epoch:
                    lost.append(table)
            else:
                kept.append(table)
        if kept:
            # A peer's scan may have dropped them from this node's set while it was dead.
            await _aw(self.redis.sadd(self.keys.node_tables(node), *kept))
        return lost

    async def release(self, table: str, *, done: bool) -> bool:
        """Give back the owner record of ``table`` (this node stops owning it): ``done`` when
        the table finished or closed (never claimed again; it leaves this node's table set),
        else ``free`` for a peer to claim it at once (it stays in the set, where the peers
        look: the claimant takes it out). False when the record was not this node's any
        more."""
        epoch = self.buffer.epochs.get(table)
        if epoch is None or epoch == FENCED_OUT:
            return False
        ok = await self._lease_release(keys=[self.keys.table_lease(table)],
                                       args=[epoch, "done" if done else "free"])
        # Handed over: a write still buffered for it is refused from now on (dropped);
        # finished: it has nothing more to write.
        self.buffer.released(table, done=done)
        if done:
            await _aw(self.redis.srem(self.keys.node_tables(self._settings.node_id), table))
        return bool(int(ok))

    async def lease(self, table: str) -> Lease | None:
        """``table``'s owner record as stored, or None (no such table, or long gone)."""
        return _lease(await _aw(self.redis.hmget(self.keys.table_lease(table), LEASE_FIELDS)))

    async def leases(self, tables: list[str]) -> dict[str, Lease | None]:
        """The owner records of ``tables``, in one pipeline (a read per table; on a cluster
        the client sends each slot's share to its master)."""
        pipe = self.redis.pipeline(transaction=False)
        for table in tables:
            pipe.hmget(self.keys.table_lease(table), LEASE_FIELDS)
        rows = await pipe.execute() if tables else []
        return {t: _lease(row) for t, row in zip(tables, rows, strict=True)}

    async def node_tables(self, node: str) -> list[str]:
        """The tables in ``node``'s table set (a hint: see :meth:`claim`)."""
        return [_text(t) for t in await _aw(self.redis.smembers(self.keys.node_tables(node)))]

    async def unindex(self, node: str, tables: list[str]) -> None:
        """Take ``tables`` out of ``node``'s table set (finished, claimed by another, or gone
        with their keys)."""
        if tables:
            await _aw(self.redis.srem(self.keys.node_tables(node), *tables))

    async def nodes(self) -> dict[str, float]:
        """Every node that said it is alive, with the time (epoch seconds, by this node's
        clock: Redis's, less the offset the last heartbeat measured) until which it counts
        as alive."""
        raw = await reads(self.redis).zrange_with_scores(self.keys.nodes)
        offset = self.clock_offset
        return {_text(node): float(score) / 1000 - offset for node, score in raw}

    async def node_until(self, node: str) -> float | None:
        """Until when ``node`` counts as alive (as :meth:`nodes`, for one node); None when
        it is not in the node set."""
        score = await _aw(self.redis.zscore(self.keys.nodes, node))
        return None if score is None else float(score) / 1000 - self.clock_offset

    async def node_gone(self, node: str) -> None:
        """``node`` stops (shutdown): gone from the node set when nothing of it is left for
        a peer (no table it still owns or handed over unclaimed), else dead from now on and
        marked stopped (a peer takes its tables over without counting it as lost)."""
        if not await self.tables_left(node):
            await self.forget_nodes([node])
            return
        now_ms = int((time.time() + self.clock_offset) * 1000)
        pipe = self.redis.pipeline(transaction=False)  # one hash tag: one node's replies
        pipe.zadd(self.keys.nodes, {node: now_ms})
        pipe.hset(self.keys.nodes_stopped, node, str(now_ms))
        await pipe.execute()

    async def node_started(self, node: str) -> None:
        """``node`` starts (perhaps under the id of one that stopped): not stopped."""
        await _aw(self.redis.hdel(self.keys.nodes_stopped, node))

    async def stopped_nodes(self) -> set[str]:
        """The nodes that stopped cleanly with tables left for a peer."""
        return {_text(n) for n in await _aw(self.redis.hkeys(self.keys.nodes_stopped))}

    async def tables_left(self, node: str) -> bool:
        """Whether a table of ``node``'s set is still recorded as ``node``'s and not done
        (a game in progress, or handed over and not claimed yet)."""
        tables = await self.node_tables(node)
        for at in range(0, len(tables), 256):
            leases = await self.leases(tables[at:at + 256])
            if any(lease is not None and not lease.done and lease.node == node
                   for lease in leases.values()):
                return True
        return False

    async def forget_nodes(self, nodes: list[str]) -> None:
        """Drop nodes from the node set (long dead, or stopped with nothing left), with what
        is left of their table sets."""
        if nodes:
            await _aw(self.redis.zrem(self.keys.nodes, *nodes))
            await _aw(self.redis.hdel(self.keys.online, *nodes))
            await _aw(self.redis.hdel(self.keys.node_lag, *nodes))
            await _aw(self.redis.hdel(self.keys.nodes_stopped, *nodes))
            await _aw(self.redis.delete(*[self.keys.node_tables(n) for n in nodes]))

    async def owner_of(self, table: str) -> str | None:
        """The node holding (or last holding) ``table``'s lease; None when there is none."""
        raw = await _aw(self.redis.hget(self.keys.table_lease(table), "node"))
        return None if raw is None else _text(raw)

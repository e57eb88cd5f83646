"""Players' records in Redis: the seat lock (one live table per player) and presence (the
nodes a player has sockets on, where the account was seen from). A part of
:class:`server.store.persistence.Persistence`, which supplies the client, the keys, the
registered scripts and :meth:`lease`.
"""

from __future__ import annotations

import time
from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.commands.core import AsyncScript

from server.config import Settings
from server.matchmaking.policy import DEFAULT_SETTINGS
from server.protocol.ids import network_key
from server.store.keys import Keys

ADDRESS_FIELD = "address"
#: An account's addresses over time (keys.addresses): how many, and how long after the last.
ADDRESSES_KEPT = 50
ADDRESSES_TTL_MS = 90 * 86400 * 1000


class PlayerRecords:
    """Seat locks and presence."""

    redis: aioredis.Redis
    keys: Keys
    _settings: Settings
    _release_seat: AsyncScript
    _seat_ttl_ms: int

    async def lease(self, table: str) -> Any:
        raise NotImplementedError

    # --- seats (one live table per player) -----------------------------------------------

    async def take_seat(self, player: str, table: str) -> str | None:
        """Hold ``player``'s seat lock for ``table``. None on success, else the table that
        already holds it (taking the seat at the same table again succeeds)."""
        key = self.keys.seat(player)
        if await self.redis.set(key, table, nx=True, px=self._seat_ttl_ms):
            return None
        current = await self.redis.get(key)
        if current is None:  # released in between; try once more
            if await self.redis.set(key, table, nx=True, px=self._seat_ttl_ms):
                return None
            current = await self.redis.get(key)
        held = current.decode() if isinstance(current, bytes) else str(current)
        if held == table:
            return None
        lease = await self.lease(held)
        if lease is not None and lease.done:
            # That table finished or was cleaned up after its node died, without this seat
            # being freed (its node died first): free it now.
            await self.release_seat(player, held)
            if await self.redis.set(key, table, nx=True, px=self._seat_ttl_ms):
                return None
        return held

    async def release_seat(self, player: str, table: str) -> None:
        await self._release_seat(keys=[self.keys.seat(player)], args=[table])

    async def seat_of(self, player: str) -> str | None:
        raw = await self.redis.get(self.keys.seat(player))
        return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)

    # --- presence ------------------------------------------------------------------------

    async def presence_join(self, player: str, node: str, address: str) -> None:
        """One more socket of ``player`` on ``node`` (called when its first one opens)."""
        key = self.keys.presence(player)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(key, node, 1)
            pipe.hset(key, ADDRESS_FIELD, address)
            pipe.pexpire(key, int(self._settings.presence_ttl * 1000))
            self._record_address(pipe, player, address)
            await pipe.execute()

    async def seen_from(self, player: str, address: str) -> None:
        """Another socket of ``player`` (not its first on this node): only where it came from
        is recorded (:meth:`presence_join` does it for a first socket)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            self._record_address(pipe, player, address)
            await pipe.execute()

    def _record_address(self, pipe: Pipeline, player: str, address: str) -> None:
        """Where the account has been seen from, over time (same key tag {p:<player>})."""
        seen = self.keys.addresses(player)
        pipe.zadd(seen, {network_key(address, ipv6_prefix=DEFAULT_SETTINGS.ipv6_prefix):
                     int(time.time() * 1000)})
        pipe.zremrangebyrank(seen, 0, -(ADDRESSES_KEPT + 1))
        pipe.pexpire(seen, ADDRESSES_TTL_MS)

    async def presence_leave(self, player: str, node: str) -> None:
        # The key may be gone (expired, or deleted under a closing node): HINCRBY makes it
        # again, so it gets the TTL too, and never stays for good.
        key = self.keys.presence(player)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(key, node, -1)
            pipe.pexpire(key, int(self._settings.presence_ttl * 1000))
            await pipe.execute()

    async def presence(self, player: str) -> tuple[list[str], str | None]:
        """Nodes where ``player`` has sockets, and the address of the latest one."""
        raw = await cast(Any, self.redis.hgetall(self.keys.presence(player)))
        nodes: list[str] = []
        address: str | None = None
        for k, v in raw.items():
            name = k.decode() if isinstance(k, bytes) else str(k)
            value = v.decode() if isinstance(v, bytes) else str(v)
            if name == ADDRESS_FIELD:
                address = value
            elif int(value) > 0:
                nodes.append(name)
        return nodes, address

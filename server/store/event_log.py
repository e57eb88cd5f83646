"""Reading a table's event log and snapshot back from Redis (sync pages, catch-up, takeover).
A part of :class:`server.store.persistence.Persistence`, which supplies the client, the keys
and :meth:`flush` (every read writes what is buffered first).
"""

from __future__ import annotations

from typing import Any

import msgpack
import redis.asyncio as aioredis

from server.store.keys import Keys
from server.store.results import _aw

LOG_SLACK = 16
"""Entries read beyond a page's range at each side of the log (repeated or newer ones)."""


class EventLogReads:
    """A table's logged events and snapshot."""

    redis: aioredis.Redis
    keys: Keys

    async def flush(self, *, everything: bool = False) -> None:
        raise NotImplementedError

    async def events_since(self, table: str, since: int) -> list[dict[str, Any]]:
        """Logged events of ``table`` with ``v > since``, in order (flushes the buffer first)."""
        await self.flush()
        raw = await _aw(self.redis.lrange(self.keys.table_events(table), 0, -1))
        # See write_result: the list is nearly in order, and a write retried after Redis
        # failed mid-way may have stored an event twice; each version is kept once.
        by_version = {int(e.get("v", 0)): e for e in map(msgpack.unpackb, raw)}
        return [by_version[v] for v in sorted(by_version) if v > since]

    async def events_between(self, table: str, since: int, upto: int,
                             last: int) -> list[dict[str, Any]]:
        """Logged events of ``table`` with ``since < v <= upto``, in order (flushes the buffer
        first); ``last`` is the table's latest version. Reads one range of the log, not all
        of it: each version is stored once, so version ``v`` is ``last - v`` places from the
        log's end (a slack absorbs a few repeated or newer entries; when the range still
        misses the versions, the whole log is read, as :meth:`events_since` does)."""
        await self.flush()
        if upto <= since:
            return []
        first = -(last - since) - LOG_SLACK
        end = min(-1, -(last - upto + 1) + LOG_SLACK)
        raw = await _aw(self.redis.lrange(self.keys.table_events(table), first, end))
        by_version = {int(e.get("v", 0)): e for e in map(msgpack.unpackb, raw)}
        found = [by_version[v] for v in sorted(by_version) if since < v <= upto]
        if len(found) == upto - since or (raw and len(raw) < end - first + 1
                                            and min(by_version, default=0) > since + 1):
            return found  # all of them, or the log starts after since (trimmed): no more
        return [e for e in await self.events_since(table, since) if e["v"] <= upto]

    async def snapshot(self, table: str) -> dict[str, Any] | None:
        raw = await self.redis.get(self.keys.table_snapshot(table))
        return None if raw is None else dict(msgpack.unpackb(raw))

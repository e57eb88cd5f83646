"""The lobby index in Redis: which tables are listed, in list order, and its pages (one
script each way; a page read shortly before is reused). A part of
:class:`server.store.persistence.Persistence`, which supplies the client, the keys and the
registered scripts.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript

from server.config import Settings
from server.protocol.messages import TableMode
from server.store.keys import Keys

LISTED_MODES = tuple(str(mode) for mode in TableMode)
"""Every table mode, for unlisting without a mode (and the modes a list request may name)."""
PAGE_CACHE_MAX = 1024
"""Table-list pages kept at once (see :meth:`LobbyIndex.table_page_raw`)."""


def listing_score(summary: dict[str, Any]) -> float:
    """The lobby index's order: open tables first, then newest first."""
    rank = 0 if summary.get("status") == "open" else 1
    created_ms = int(float(summary.get("created_at") or 0) * 1000)
    return rank * 1e13 + (1e13 - created_ms)



class LobbyIndex:
    """The lobby index's reads and writes."""

    redis: aioredis.Redis
    keys: Keys
    _settings: Settings
    _lobby_list: AsyncScript
    _lobby_page: AsyncScript
    _pages: dict[tuple[str | None, int, int], tuple[float, asyncio.Future[tuple[int, list[bytes]]]]]

    async def list_table(self, table: str, summary: dict[str, Any]) -> None:
        """List (or update) ``table`` in the lobby index (one script, one round trip)."""
        data = json.dumps(summary, separators=(",", ":"))
        self._pages.clear()  # this node's own changes show at once (others' within the TTL)
        await self._lobby_list(
            keys=[self.keys.lobby, self.keys.lobby_index(),
                  self.keys.lobby_index(str(summary.get("mode")))],
            args=[table, data, listing_score(summary)],
        )

    async def unlist_table(self, table: str, mode: str | None = None) -> None:
        """Take ``table`` out of the lobby index (of every mode's index when ``mode`` is not
        given)."""
        self._pages.clear()
        modes = [mode] if mode is not None else list(LISTED_MODES)
        await self._lobby_list(
            keys=[self.keys.lobby, self.keys.lobby_index(),
                  *(self.keys.lobby_index(m) for m in modes)],
            args=[table, "", 0],
        )

    async def listed_tables(self) -> list[dict[str, Any]]:
        """Every listed table (unordered; reads the whole index: tests and tools only)."""
        raw = await cast(Any, self.redis.hvals(self.keys.lobby))
        return [json.loads(r) for r in raw]

    async def table_page(self, mode: str | None, offset: int, limit: int
                         ) -> tuple[int, list[dict[str, Any]]]:
        """One page of the lobby index in list order (open tables first, newest first) and
        the number of tables listed (of ``mode``): one ``EVALSHA``, whatever that number."""
        total, rows = await self.table_page_raw(mode, offset, limit)
        return total, [json.loads(r) for r in rows]

    async def table_page_raw(self, mode: str | None, offset: int, limit: int
                             ) -> tuple[int, list[bytes]]:
        """:meth:`table_page` with each summary as the JSON bytes stored. A page read in the
        last ``list_cache_ttl`` seconds is reused, and identical requests arriving while it
        is read share that one read (a flood of list requests costs Redis one read per page
        and period, and the node no parsing)."""
        ttl = self._settings.list_cache_ttl
        if ttl <= 0:
            return await self._read_page(mode, offset, limit)
        key = (mode, offset, limit)
        now = asyncio.get_running_loop().time()
        cached = self._pages.get(key)
        if cached is not None and cached[0] > now:
            return await cached[1]
        future = asyncio.ensure_future(self._read_page(mode, offset, limit))
        if len(self._pages) >= PAGE_CACHE_MAX:
            self._pages = {k: v for k, v in self._pages.items() if v[0] > now}
            if len(self._pages) >= PAGE_CACHE_MAX:
                self._pages.clear()
        self._pages[key] = (now + ttl, future)
        try:
            return await asyncio.shield(future)
        except BaseException:
            if self._pages.get(key, (0.0, None))[1] is future:
                del self._pages[key]  # a failed read is not kept
            raise

    async def _read_page(self, mode: str | None, offset: int, limit: int
                         ) -> tuple[int, list[bytes]]:
        reply = await self._lobby_page(keys=[self.keys.lobby, self.keys.lobby_index(mode)],
                                       args=[offset, limit])
        return int(reply[0]), [bytes(r) for r in reply[1:]]

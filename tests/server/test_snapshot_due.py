"""When the write-behind flush writes a table's snapshot (server/store/write_buffer.py): at
once for a table with none written lately or marked urgent, else once its interval is over;
and the flusher keeps its own Redis connection (given back to the pool on stop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from server.config import Settings
from server.store import persistence as persistence_module
from server.store import write_buffer
from server.store.keys import Keys
from server.store.persistence import Persistence

INTERVAL = 0.2


async def test_snapshots_wait_for_their_interval_unless_urgent(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(persistence_module, "SNAPSHOT_INTERVAL", INTERVAL)
    monkeypatch.setattr(write_buffer, "SNAPSHOT_INTERVAL", INTERVAL)
    settings = make_settings()
    store = Persistence(redis_client, Keys(settings.key_prefix), settings)
    await store.load_scripts()
    for table in ("t1", "t2"):
        store.adopt(table, (await store.claim(table, "a", new=True))[0])

    async def shown() -> tuple[int | None, int | None]:
        snaps = [await store.snapshot(t) for t in ("t1", "t2")]
        return tuple(None if s is None else s["v"] for s in snaps)  # type: ignore[return-value]

    store.mark_dirty("t1", lambda: {"v": 1})  # none written yet: with the next flush
    await store.flush()
    assert await shown() == (1, None)
    store.mark_dirty("t1", lambda: {"v": 2})  # written just now: waits
    await store.flush()
    assert await shown() == (1, None)
    store.mark_dirty("t2", lambda: {"v": 1}, urgent=True)
    await store.flush()
    assert await shown() == (1, 1)  # t1 still waits
    await asyncio.sleep(INTERVAL * 1.2)
    await store.flush()
    assert await shown() == (2, 1)  # t1's interval is over
    store.mark_dirty("t1", lambda: {"v": 3})
    await store.flush()
    assert await shown() == (2, 1)
    await asyncio.sleep(INTERVAL * 1.2)
    store.mark_dirty("t2", lambda: {"v": 2})  # both due now
    await store.flush()
    assert await shown() == (3, 2)
    assert len(store._flush_conn) == 1  # the flusher's own connection, kept
    await store.stop()
    assert store._flush_conn == []

"""``Persistence.events_between``: one page of a table's Redis log read as one range, right
when versions are repeated in the log (a retried write) or trimmed from its start."""

from __future__ import annotations

from collections.abc import Callable

import msgpack
import redis.asyncio as aioredis

from server.config import Settings
from server.store.keys import Keys
from server.store.persistence import Persistence, _aw


def _event(v: int) -> bytes:
    return bytes(msgpack.packb({"type": "moved", "v": v}))


async def _log(redis: aioredis.Redis, store: Persistence, table: str,
               versions: list[int]) -> None:
    await _aw(redis.rpush(store.keys.table_events(table), *[_event(v) for v in versions]))


async def test_pages_of_a_plain_a_repeated_and_a_trimmed_log(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    store = Persistence(redis_client, Keys(settings.key_prefix), settings)
    await _log(redis_client, store, "plain", list(range(1, 2001)))
    for since, upto in ((0, 200), (600, 800), (1900, 2000), (1999, 2000)):
        page = await store.events_between("plain", since, upto, 2000)
        assert [e["v"] for e in page] == list(range(since + 1, upto + 1))
    # 40 versions stored twice near the end: more than the slack, read in full instead.
    await _log(redis_client, store, "repeated",
               list(range(1, 1001)) + list(range(961, 1001)) + list(range(1001, 1101)))
    for since, upto in ((0, 200), (900, 1000), (1000, 1100)):
        page = await store.events_between("repeated", since, upto, 1100)
        assert [e["v"] for e in page] == list(range(since + 1, upto + 1))
    # A log whose first 500 versions were trimmed: what it has, nothing before.
    await _log(redis_client, store, "trimmed", list(range(501, 1001)))
    page = await store.events_between("trimmed", 0, 200, 1000)
    assert page == []
    page = await store.events_between("trimmed", 400, 600, 1000)
    assert [e["v"] for e in page] == list(range(501, 601))

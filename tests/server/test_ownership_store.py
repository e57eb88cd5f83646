"""Owner records, heartbeats and fenced writes on a real Redis (server/store/lua/lease_*.lua,
node_heartbeat.lua, fenced_*.lua through Persistence): one claimant wins, a claim needs the
epoch it read, a heartbeat tells a node it was taken for dead, a stale owner writes nothing
(events, snapshot, result), and the flush tells each table what was stored."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import msgpack
import redis.asyncio as aioredis

from server.config import Settings
from server.store.keys import Keys
from server.store.persistence import FENCED_OUT, Fenced, Persistence, _aw


def _store(redis: aioredis.Redis, settings: Settings, *,
           on_stored: Callable[[str, int], None] | None = None,
           on_fenced: Callable[[str], None] | None = None) -> Persistence:
    return Persistence(redis, Keys(settings.key_prefix), settings, on_stored=on_stored,
                       on_fenced=on_fenced)


def _event(v: int) -> bytes:
    return bytes(msgpack.packb({"type": "move", "v": v}))


async def _members(redis: aioredis.Redis, store: Persistence, node: str) -> set[str]:
    return {m.decode() for m in await _aw(redis.smembers(store.keys.node_tables(node)))}


async def test_claim_one_winner_and_epochs(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    store = _store(redis_client, make_settings())
    assert await store.claim("t1", "a", new=True) == (1, "")
    assert await _members(redis_client, store, "a") == {"t1"}
    assert (await store.claim("t1", "b", new=True))[0] == 0  # exists already
    assert (await store.claim("t1", "b", new=False, epoch=7))[0] == 0  # not the epoch read
    assert await _members(redis_client, store, "b") == set()
    replies = await asyncio.gather(*(store.claim("t1", n, new=False, epoch=1) for n in "bcde"))
    winners = [r for r in replies if r[0]]
    assert winners == [(2, "a")]
    lease = await store.lease("t1")
    assert lease is not None and lease.epoch == 2 and not lease.done and not lease.free
    assert lease.node == "bcde"[replies.index(winners[0])]
    assert await store.owner_of("t1") == lease.node
    # The table moved from the old owner's set to the winner's, and only there.
    assert await _members(redis_client, store, "a") == set()
    for node in "bcde":
        assert await _members(redis_client, store, node) == ({"t1"} if node == lease.node
                                                              else set())
    assert await store.lease("nope") is None
    assert (await store.claim("nope", "b", new=False, epoch=1))[0] == 0
    assert (await store.leases(["t1", "nope"]))["nope"] is None


async def test_heartbeat_tells_a_node_it_was_taken_for_dead(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings()
    a, b = _store(redis_client, settings), _store(redis_client, settings)
    assert not await a.heartbeat("a", 6.0)  # first time: nobody took it for anything
    assert not await a.heartbeat("a", 6.0)  # in time
    assert "a" in await b.nodes()
    for table in ("t1", "t2"):
        a.adopt(table, (await a.claim(table, "a", new=True))[0])
    # Paused past its time: a peer takes t1 over (t2 not yet).
    await redis_client.zadd(a.keys.nodes, {"a": 1})
    b.adopt("t1", (await b.claim("t1", "b", new=False, epoch=1))[0])
    await a.unindex("a", ["t2"])  # as a peer's scan might, from a set it read earlier
    assert await a.heartbeat("a", 6.0)
    assert await a.lost_tables("a") == ["t1"]
    assert await _members(redis_client, a, "a") == {"t2"}  # put back: still a's
    assert not await a.heartbeat("a", 6.0)
    await a.node_gone("a")
    assert (await b.nodes())["a"] <= time.time() + 1.0


async def test_release_free_and_done(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    store = _store(redis_client, make_settings(node_id="a"))
    store.adopt("t1", (await store.claim("t1", "a", new=True))[0])
    assert await store.release("t1", done=False)
    lease = await store.lease("t1")
    assert lease is not None and lease.free and lease.node == "a"
    assert "t1" in await store.node_tables("a")  # where the peers look
    assert (await store.claim("t1", "b", new=False, epoch=1))[0] == 2  # a peer claims at once
    lease = await store.lease("t1")
    assert lease is not None and not lease.free and lease.node == "b"
    assert "t1" not in await store.node_tables("a")
    store.adopt("t2", (await store.claim("t2", "a", new=True))[0])
    assert await store.release("t2", done=True)
    assert "t2" not in await store.node_tables("a")
    assert (await store.claim("t2", "b", new=False, epoch=1))[0] == 0  # finished: never again
    assert not await store.release("t2", done=True)  # no epoch any more


async def test_flush_is_fenced_and_tells_each_table(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(event_log_max=5)
    stored: list[tuple[str, int]] = []
    fenced: list[str] = []
    old = _store(redis_client, settings, on_stored=lambda t, v: stored.append((t, v)),
                 on_fenced=fenced.append)
    new = _store(redis_client, settings)
    await old.load_scripts()
    for table in ("t1", "t2"):
        old.adopt(table, (await old.claim(table, "a", new=True))[0])
    for v in range(1, 8):
        old.append_event("t1", v, _event(v))
    old.append_event("t2", 1, _event(1))
    old.mark_dirty("t1", lambda: {"v": 7}, urgent=True)
    await old.flush()
    assert sorted(stored) == [("t1", 7), ("t2", 1)]
    assert [e["v"] for e in await old.events_since("t1", 0)] == [3, 4, 5, 6, 7]  # trimmed
    assert await old.snapshot("t1") == {"v": 7}
    assert await redis_client.pttl(old.keys.table_events("t1")) > 0
    # Another node claims t1: old's next write of t1 lands nowhere, t2's still does.
    new.adopt("t1", (await new.claim("t1", "b", new=False, epoch=1))[0])
    stored.clear()
    old.append_event("t1", 8, _event(8))
    old.append_event("t2", 2, _event(2))
    old.mark_dirty("t1", lambda: {"v": 8}, urgent=True)
    await old.flush()
    assert fenced == ["t1"] and stored == [("t2", 2)]
    assert old.epochs["t1"] == FENCED_OUT
    assert [e["v"] for e in await new.events_since("t1", 0)] == [3, 4, 5, 6, 7]
    assert await new.snapshot("t1") == {"v": 7}
    old.append_event("t1", 9, _event(9))  # refused from now on, whatever the lease says
    await old.flush()
    assert [e["v"] for e in await new.events_since("t1", 0)][-1] == 7


async def test_result_is_fenced_and_atomic(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings()
    old, new = _store(redis_client, settings), _store(redis_client, settings)
    old.adopt("t1", (await old.claim("t1", "a", new=True))[0])
    old.append_event("t1", 1, _event(1))
    result: dict[str, Any] = {"game_id": "g1", "winner": "p"}
    await old.write_result("t1", result, [("p", {"type": "rating", "event_id": "e1"})])
    raw = await _aw(redis_client.lrange(old.keys.table_results("t1"), 0, -1))
    assert [json.loads(r) for r in raw] == [result]
    assert [e["v"] for e in await old.events_since("t1", 0)] == [1]
    assert [e["event_id"] for e in await old.inbox("p")] == ["e1"]
    new.adopt("t1", (await new.claim("t1", "b", new=False, epoch=1))[0])
    old.append_event("t1", 2, _event(2))
    try:
        await old.write_result("t1", {"game_id": "g2"}, [("p", {"event_id": "e2"})])
    except Fenced:
        pass
    else:  # pragma: no cover
        raise AssertionError("a stale owner stored a result")
    assert len(await _aw(redis_client.lrange(old.keys.table_results("t1"), 0, -1))) == 1
    assert [e["v"] for e in await new.events_since("t1", 0)] == [1]
    assert [e["event_id"] for e in await old.inbox("p")] == ["e1"]


async def test_group_commit_starts_at_once(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    """No fixed wait: the flusher writes on the next turn of the loop, and what is buffered
    while a flush is in flight goes with the one right after it."""
    done = asyncio.Event()
    seen: list[int] = []

    def on_stored(table: str, version: int) -> None:
        seen.append(version)
        if version == 3:
            done.set()

    store = _store(redis_client, make_settings(), on_stored=on_stored)
    await store.load_scripts()
    store.adopt("t1", (await store.claim("t1", "a", new=True))[0])
    store.start()
    try:
        store.append_event("t1", 1, _event(1))
        await asyncio.sleep(0)
        store.append_event("t1", 2, _event(2))
        store.append_event("t1", 3, _event(3))
        await asyncio.wait_for(done.wait(), 5.0)
    finally:
        await store.stop()
    assert seen[-1] == 3 and seen == sorted(seen)
    assert [e["v"] for e in await store.events_since("t1", 0)] == [1, 2, 3]


async def test_a_seat_at_a_done_table_is_freed_when_taken(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    """A table cleaned up after its node died may leave a seat behind: it does not hold."""
    store = _store(redis_client, make_settings())
    store.adopt("t1", (await store.claim("t1", "a", new=True))[0])
    store.adopt("t2", (await store.claim("t2", "a", new=True))[0])
    assert await store.take_seat("p", "t1") is None
    assert await store.take_seat("p", "t2") == "t1"  # live: held
    await store.release("t1", done=True)
    assert await store.take_seat("p", "t2") is None
    assert await store.seat_of("p") == "t2"


async def test_a_write_sent_again_stores_each_version_once(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    """A write whose reply was lost (or that was cancelled after it was sent) is sent again
    with its events: the scripts skip the versions the log holds already."""
    store = _store(redis_client, make_settings())
    await store.load_scripts()
    store.adopt("t1", (await store.claim("t1", "a", new=True))[0])
    for v in (1, 2):
        store.append_event("t1", v, _event(v))
    await store.flush()
    # The same events again (as the write-behind puts back a batch whose outcome is
    # unknown), with a new one after them.
    for v in (1, 2, 3):
        store.append_event("t1", v, _event(v))
    await store.flush()
    raw = await _aw(redis_client.lrange(store.keys.table_events("t1"), 0, -1))
    assert [msgpack.unpackb(e)["v"] for e in raw] == [1, 2, 3]
    for v in (3, 4):  # the end of a game, retried: v3 again, v4 new
        store.append_event("t1", v, _event(v))
    await store.write_result("t1", {"game_id": "g1"}, [])
    raw = await _aw(redis_client.lrange(store.keys.table_events("t1"), 0, -1))
    assert [msgpack.unpackb(e)["v"] for e in raw] == [1, 2, 3, 4]
    # A new owner goes on after the highest version stored.
    other = _store(redis_client, make_settings())
    other.adopt("t1", (await other.claim("t1", "b", new=False, epoch=1))[0])
    other.append_event("t1", 5, _event(5))
    await other.flush()
    raw = await _aw(redis_client.lrange(store.keys.table_events("t1"), 0, -1))
    assert [msgpack.unpackb(e)["v"] for e in raw] == [1, 2, 3, 4, 5]


async def test_a_released_table_keeps_nothing_buffered(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    """Handed over (drain): what is still buffered for the table is dropped, never written
    later under whatever epoch the node holds then."""
    store = _store(redis_client, make_settings())
    await store.load_scripts()
    store.adopt("t1", (await store.claim("t1", "a", new=True))[0])
    store.append_event("t1", 1, _event(1))
    await store.flush()
    store.append_event("t1", 2, _event(2))
    assert await store.release("t1", done=False)
    assert store.pending_events == 0
    await store.flush()
    raw = await _aw(redis_client.lrange(store.keys.table_events("t1"), 0, -1))
    assert [msgpack.unpackb(e)["v"] for e in raw] == [1]


async def test_a_retried_result_lists_its_game_once(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings]
) -> None:
    """A result write retried after its reply was lost (Redis applied it) lists the game
    once; another game of the table is listed after it."""
    store = _store(redis_client, make_settings())
    epoch, _ = await store.claim("t1", "a", new=True)
    store.adopt("t1", epoch)
    store.append_event("t1", 1, _event(1))
    await store.write_result("t1", {"game_id": "g1", "winner": "x"}, [])
    await store.write_result("t1", {"game_id": "g1", "winner": "x"}, [])
    await store.write_result("t1", {"game_id": "g2", "winner": "y"}, [])
    raw = await _aw(redis_client.lrange(store.keys.table_results("t1"), 0, -1))
    assert [json.loads(r)["game_id"] for r in raw] == ["g1", "g2"]
    assert await store.has_result("t1", "g1")
    assert await _aw(redis_client.lrange(store.keys.table_events("t1"), 0, -1)) == [_event(1)]

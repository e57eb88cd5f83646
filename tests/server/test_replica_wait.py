"""Replicated before announced on one Redis with a replica (server/store/replicas.py): the
write-behind flush ends its batch with a ``WAIT`` and tells the table its events are stored
only once the replica has them; a replica that stops reading (SIGSTOP) makes the flush fall
short: nothing is announced, the events stay buffered, and the next flush after it reads
again stores each version once and announces them. A game's end waits on every master
the same way. A master with no replica is not asked."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable

import msgpack
import pytest
import redis.asyncio as aioredis

from server.config import Settings
from server.embedded_redis import EmbeddedRedis
from server.store.keys import Keys
from server.store.persistence import Persistence, _aw
from server.store.replicas import ReplicaTimeout


def _event(v: int) -> bytes:
    return bytes(msgpack.packb({"type": "move", "v": v}))


async def _online(master: aioredis.Redis) -> bool:
    info = await master.info("replication")
    return any(str(k).startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
               for k, v in info.items())


async def test_a_flush_waits_for_the_replica_and_holds_while_it_lags(
    make_settings: Callable[..., Settings], key_prefix: str
) -> None:
    with EmbeddedRedis() as master, EmbeddedRedis() as replica:
        follower = aioredis.Redis.from_url(replica.url)
        client = aioredis.Redis.from_url(master.url)
        try:
            await follower.execute_command("REPLICAOF", "127.0.0.1", str(master.port))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while not await _online(client):
                assert loop.time() < deadline, "the replica never came online"
                await asyncio.sleep(0.02)
            stored: list[tuple[str, int]] = []
            store = Persistence(client, Keys(key_prefix), make_settings(),
                                on_stored=lambda t, v: stored.append((t, v)))
            await store.load_scripts()
            epoch, _ = await store.claim("t1", "a", new=True)
            store.adopt("t1", epoch)
            store.append_event("t1", 1, _event(1))
            await store.flush()
            assert stored == [("t1", 1)] and store.replicas.waits == 1
            await store.replicas.replicated()  # a game's end: on every master's replicas
            assert replica.pid is not None
            os.kill(replica.pid, signal.SIGSTOP)
            try:
                store.append_event("t1", 2, _event(2))
                with pytest.raises(ReplicaTimeout):
                    await store.flush()
                assert stored == [("t1", 1)]  # on the master only: not announced
                assert not store.redis_up  # the table holds as in an outage
                with pytest.raises(ReplicaTimeout):
                    await store.replicas.replicated()
            finally:
                os.kill(replica.pid, signal.SIGCONT)
            await store.flush()
            assert stored == [("t1", 1), ("t1", 2)]
            logged = [msgpack.unpackb(e)["v"] for e in
                      await _aw(client.lrange(store.keys.table_events("t1"), 0, -1))]
            assert logged == [1, 2]
        finally:
            await follower.aclose()
            await client.aclose()


async def test_a_master_with_no_replica_is_not_asked(
    redis_client: aioredis.Redis, make_settings: Callable[..., Settings], key_prefix: str
) -> None:
    store = Persistence(redis_client, Keys(key_prefix), make_settings())
    await store.load_scripts()
    epoch, _ = await store.claim("t1", "a", new=True)
    store.adopt("t1", epoch)
    store.append_event("t1", 1, _event(1))
    await store.flush()
    await store.replicas.replicated()
    assert store.replicas.waits == 0

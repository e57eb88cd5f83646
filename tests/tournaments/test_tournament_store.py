"""The tournament store's atomic steps on a real Redis: registration rules, one bracket start,
a bracket's lease (one holder; a node without it cannot save), runner keys."""

from __future__ import annotations

from typing import cast

import redis.asyncio as aioredis

from server.store.keys import Keys
from server.tournaments.keys import TournamentKeys
from server.tournaments.runner_keys import RunnerKeys
from server.tournaments.spec import TournamentSpec
from server.tournaments.store import ALREADY, CLOSED, FULL, NO_SUCH, REGISTERED, TournamentStore


def store(redis: aioredis.Redis, prefix: str) -> TournamentStore:
    return TournamentStore(redis, TournamentKeys(prefix), Keys(prefix))


async def test_registration_and_bracket_start(redis_client: aioredis.Redis,
                                              key_prefix: str) -> None:
    s = store(redis_client, key_prefix)
    t = await s.create("acme", "k1", TournamentSpec("cup", "public", (50, 25, 15), 0))
    tid = t["id"]
    assert await s.register(tid, "a", 2) == REGISTERED
    assert await s.register(tid, "a", 2) == ALREADY
    assert await s.register(tid, "b", 2) == REGISTERED
    assert await s.register(tid, "c", 2) == FULL
    assert await s.register("tn000000000000", "a", 2) == NO_SUCH
    assert await s.unregister(tid, "c") == 0
    assert await s.start_bracket(tid, {"bracket": {}}) == 1
    assert await s.start_bracket(tid, {"bracket": {}}) == CLOSED
    assert await s.register(tid, "c", 3) == CLOSED
    assert await s.unregister(tid, "a") == CLOSED
    found = await s.get(tid)
    assert found is not None and found["status"] == "running" and found["bracket"]
    assert found["players"] == ["a", "b"]
    assert await s.running() == [tid]


async def test_lease_has_one_holder_and_fences_saves(redis_client: aioredis.Redis,
                                                     key_prefix: str) -> None:
    s = store(redis_client, key_prefix)
    tid = (await s.create("acme", "k1", TournamentSpec("cup", "private", (50,), 3)))["id"]
    await s.start_bracket(tid, {"v": 0})
    assert await s.take_lease(tid, "n1", 5.0)
    assert await s.take_lease(tid, "n1", 5.0)  # renewed
    assert not await s.take_lease(tid, "n2", 5.0)
    assert not await s.save_bracket(tid, "n2", {"v": 2}, "running")
    assert await s.save_bracket(tid, "n1", {"v": 1}, "running")
    assert await s.bracket(tid) == {"v": 1}
    await s.release_lease(tid, "n2")  # not its lease: nothing
    assert not await s.take_lease(tid, "n2", 5.0)
    await s.release_lease(tid, "n1")
    assert await s.take_lease(tid, "n2", 5.0)
    assert not await s.save_bracket(tid, "n1", {"v": 3}, "running")
    assert await s.bracket(tid) == {"v": 1}


async def test_runner_keys_store_only_digests(redis_client: aioredis.Redis,
                                              key_prefix: str) -> None:
    keys = RunnerKeys(redis_client, TournamentKeys(key_prefix))
    key, runner = await keys.create("acme")
    stored = await redis_client.hgetall(f"{key_prefix}runner-keys")  # type: ignore[misc]
    secret = key[len("t42rk_") + 17:]  # after the id and its "_"
    assert all(secret.encode() not in v and key.encode() not in v for v in stored.values())
    assert await keys.resolve(key) == runner
    assert await keys.resolve(key + "x") is None
    assert [r.name for r in await keys.list()] == ["acme"]
    assert await keys.revoke("acme")
    assert await keys.resolve(key) is None


async def test_start_and_inbox_on_a_cluster(redis_cluster: aioredis.RedisCluster,
                                            key_prefix: str) -> None:
    """No step of a bracket start or of keeping tournament events spans two slots; an event
    is kept once however often it is written."""
    from server.config import Settings
    from server.store.persistence import Persistence

    client = cast(aioredis.Redis, redis_cluster)
    s = store(client, key_prefix)
    t = await s.create("acme", "k1", TournamentSpec("cup", "private", (0,), 0))
    for player in ("a", "b"):
        assert await s.register(t["id"], player, 8) == REGISTERED
    assert await s.start_bracket(t["id"], {"bracket": {}}) == 1
    assert await s.start_bracket(t["id"], {"bracket": {}}) == CLOSED
    assert await s.running() == [t["id"]]
    persistence = Persistence(client, Keys(key_prefix), Settings(key_prefix=key_prefix))
    events = [(p, {"type": "tournament_over", "event_id": f"x:{p}", "player": p})
              for p in ("a", "b")]
    await persistence.keep_in_inbox(events)
    await persistence.keep_in_inbox([*events, ("a", {"type": "note"})])  # no id: not kept
    for p in ("a", "b"):
        assert [e["event_id"] for e in await persistence.inbox(p)] == [f"x:{p}"]

"""The key design holds on Redis Cluster: every script and multi-key read stays in one slot.

A one-node cluster (the embedded redis-server binary with ``cluster-enabled yes`` and all 16384
slots) still refuses any command or script whose keys span slots (CROSSSLOT), so running the
whole API through ``redis.asyncio.RedisCluster`` against it proves the hash tags are right.
"""

from __future__ import annotations

import dataclasses

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ClusterCrossSlotError

from rating_plugin.store import RatingStore

T = 1_700_000_000.0


async def test_the_cluster_refuses_keys_in_two_slots(redis_cluster: aioredis.RedisCluster) -> None:
    with pytest.raises(ClusterCrossSlotError):
        await redis_cluster.execute_command("EVAL", "return 1", 2, "a{x}", "b{y}",
                                      target_nodes=aioredis.RedisCluster.PRIMARIES)


async def test_the_whole_api_runs_on_a_cluster(
    redis_cluster: aioredis.RedisCluster, key_prefix: str
) -> None:
    store = RatingStore(redis_cluster, prefix=key_prefix)
    await store.load_scripts()
    first = await store.settle("g1", ladder="table42", winner="a", loser="b", cube=2,
                               finished_at=T)
    assert (first.winner.change, first.loser.change) == (19, -19)
    again = await store.settle("g1", ladder="table42", winner="a", loser="b", cube=2,
                               finished_at=T)
    assert not again.applied
    match = await store.settle("m1", ladder="fibs", winner="b", loser="c", match_length=11,
                               finished_at=T)
    assert match.winner.experience_before == 0
    award = await store.award_podium("cup", ["c", "a", "b"], awarded_at=T)
    assert award.changes == {"c": 50, "a": 25, "b": 15}
    boosted = await store.add_boosted_points("g1", winner="a", loser="b", points=4,
                                             finished_at=T)
    assert boosted.winner_total == 4
    assert [e.player for e in await store.leaderboard("table42")] == ["c", "a", "b"]
    assert [e.player for e in await store.leaderboard("fibs")] == ["b", "c"]
    assert await store.rank("a", "boosted") == 1
    assert [e.ref for e in await store.history("a", "table42")] == ["cup", "g1"]
    assert (await store.rating("b", "fibs")).experience == 11
    assert await store.recent_games("a", T + 1) == 1
    assert await store.settlement("m1") == dataclasses.replace(match, applied=False)

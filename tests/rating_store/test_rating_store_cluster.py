"""The key design holds on Redis Cluster: every script and multi-key read stays in one slot.

A one-node cluster (the embedded redis-server binary with ``cluster-enabled yes`` and all 16384
slots) still refuses any command or script whose keys span slots (CROSSSLOT), so running the
whole API through ``redis.asyncio.RedisCluster`` against it proves the hash tags are right.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, cast

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ClusterCrossSlotError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError

from rating_plugin.store import RatingStore
from server.embedded_redis import redis_server_binary

T = 1_700_000_000.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def cluster_port() -> Iterator[int]:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="table42-cluster-") as directory:
        process = subprocess.Popen(
            [redis_server_binary(), "--bind", "127.0.0.1", "--port", str(port),
             "--cluster-enabled", "yes", "--cluster-config-file", f"{directory}/nodes.conf",
             "--save", "", "--appendonly", "no", "--dir", directory],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            yield port
        finally:
            process.terminate()
            process.wait(10)


@pytest.fixture
async def cluster(cluster_port: int) -> AsyncIterator[aioredis.RedisCluster]:
    plain = aioredis.Redis(port=cluster_port)
    for _ in range(200):
        try:
            await plain.ping()
            break
        except (OSError, RedisConnectionError):
            await asyncio.sleep(0.02)
    command = cast("Callable[..., Awaitable[Any]]", plain.execute_command)
    with contextlib.suppress(ResponseError):  # assigned already by an earlier test
        await command("CLUSTER", "ADDSLOTS", *range(16384))
    while b"cluster_state:ok" not in await command("CLUSTER", "INFO"):
        await asyncio.sleep(0.02)
    await plain.aclose()
    client = aioredis.RedisCluster.from_url(f"redis://127.0.0.1:{cluster_port}")
    try:
        yield client
    finally:
        await client.aclose()


async def test_the_cluster_refuses_keys_in_two_slots(cluster: aioredis.RedisCluster) -> None:
    with pytest.raises(ClusterCrossSlotError):
        await cluster.execute_command("EVAL", "return 1", 2, "a{x}", "b{y}",
                                      target_nodes=aioredis.RedisCluster.PRIMARIES)


async def test_the_whole_api_runs_on_a_cluster(
    cluster: aioredis.RedisCluster, key_prefix: str
) -> None:
    store = RatingStore(cluster, prefix=key_prefix)
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

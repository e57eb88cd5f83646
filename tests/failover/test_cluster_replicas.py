"""A Redis Cluster failover costs no game: two server nodes, each seeded with another master
of a real cluster (three masters, a replica each, ``tools/redis_cluster.sh start BASE 1``),
rated games with one player on each node (both directions), and a master SIGKILLed under them
for each role it can hold: the bus seed of a node, the heartbeats (``{nodes}``) and the rated
ladders (``{rated}``: the same slot range, one master), a table's keys; then a lagging replica
(paused with SIGSTOP before its master's kill) promoted in its master's place.

Each game goes on through the failover and ends (by resignation, to keep the tests short);
the players saw every version once, the table's log holds each version once, the rating each
player was told is the one stored, and no node counted the other dead. One cluster per module
(``--cluster-node-timeout 1000``); every wait polls for its condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import msgpack
import pytest
import redis.asyncio as aioredis
from nodes import (
    TIMEOUT,
    Cluster,
    Node,
    Player,
    freshest,
    is_over,
    play_moves,
    seat_two,
    step,
    wait_ready,
    wait_until,
)
from redis.asyncio.cluster import ClusterNode
from replicated import ReplicatedCluster, binaries
from test_failover import (
    assert_log_contiguous,
    assert_saw_every_version_once,
    assert_settled_once,
)

from server.client import ConnectionLost, RequestFailed, RequestTimeout

pytestmark = pytest.mark.skipif(binaries() is None, reason="needs redis-server and redis-cli")

THROUGH_FAILOVER = 30.0
"""Seconds a step may be retried while a master is failed over (a few, at most)."""


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedCluster]:
    cluster = ReplicatedCluster(tmp_path_factory.mktemp("cluster"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
async def whole(replicated: ReplicatedCluster) -> AsyncIterator[ReplicatedCluster]:
    """The module's cluster, whole (a node killed by an earlier test started again)."""
    await replicated.whole()
    yield replicated


@pytest.fixture
async def servers(whole: ReplicatedCluster, key_prefix: str,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    masters = sorted(s.master for s in whole.shards())
    nodes = Cluster(whole.url(masters[0]), key_prefix, tmp_path)
    try:
        yield nodes
    finally:
        await nodes.close()
        print(nodes.logs())


@pytest.fixture
async def store(whole: ReplicatedCluster) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.RedisCluster(startup_nodes=[  # type: ignore[abstract]
        ClusterNode("127.0.0.1", port) for port in whole.ports])  # whichever is alive
    try:
        yield cast(aioredis.Redis, client)
    finally:
        await client.aclose()


async def start_pair(rc: ReplicatedCluster, servers: Cluster,
                     avoid: int) -> tuple[Node, Node, int]:
    """n1 and n2, each seeded with another master, n1's not ``avoid``; and n1's seed."""
    masters = sorted(s.master for s in rc.shards())
    seeds = [m for m in masters if m != avoid]
    n1, n2 = await asyncio.gather(servers.start("n1", redis_url=rc.url(seeds[0])),
                                  servers.start("n2", redis_url=rc.url(seeds[1])))
    return n1, n2, seeds[0]


async def cross_tables(servers: Cluster, n1: Node, n2: Node,
                       tag: str) -> list[tuple[str, list[Player]]]:
    """Two rated tables with a player on each node: one owned by n1, one by n2."""
    a = await servers.player(f"{tag}a", n1)
    b = await servers.player(f"{tag}b", n2)
    c = await servers.player(f"{tag}c", n2)
    d = await servers.player(f"{tag}d", n1)
    return [(await seat_two(a, b), [a, b]), (await seat_two(c, d), [c, d])]


async def resign(players: list[Player], table: str) -> dict[str, Any]:
    """End the game: the player to act resigns, the other accepts (retried while the table's
    store fails over). The ``game_over`` every player got."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + THROUGH_FAILOVER
    while not is_over(players, table):
        state = freshest(players, table) or {}
        game = state.get("game") or {}
        if game.get("phase") == "resign_offered" or game.get("to_act") is None:
            await step(players, table, retry_for=THROUGH_FAILOVER)
            continue
        actor = next(p for p in players if p.side(table) == game["to_act"])
        try:
            await actor.request({"type": "resign", "table": table})
        except (RequestFailed, RequestTimeout, ConnectionLost) as exc:
            if loop.time() > deadline:
                raise AssertionError(f"{table}: no resignation: {exc}") from exc
            with contextlib.suppress(RequestFailed, RequestTimeout, ConnectionLost):
                await actor.sync(table)
        await wait_until(lambda: is_over(players, table) or any(
            (p.latest_state(table)[1] or {}).get("game", {}).get("phase") == "resign_offered"
            for p in players), timeout=THROUGH_FAILOVER, what="the resignation offer")
    await wait_until(lambda: all(p.of_type("game_over", table) for p in players),
                     timeout=THROUGH_FAILOVER, what="game_over at every player")
    return players[0].of_type("game_over", table)[-1]


async def check_games(servers: Cluster, store: aioredis.Redis, node: Node,
                      games: list[tuple[str, list[Player]]],
                      overs: list[dict[str, Any]]) -> None:
    await wait_ready(node)  # the store answers it again (a reconnect is refused meanwhile)
    for (table, players), over in zip(games, overs, strict=True):
        assert_saw_every_version_once(players, table)
        await assert_log_contiguous(servers, store, table)
        await assert_settled_once(node, players, str(over["game_id"]))
    for node_ in servers.nodes.values():
        text = node_.log()
        assert "is gone: cleaning up" not in text, f"{node_.name} counted a peer dead:\n{text}"
        assert "follows v" not in text and "does not replay" not in text, text


async def test_a_master_killed_for_each_role_costs_no_game(
    whole: ReplicatedCluster, servers: Cluster, store: aioredis.Redis, key_prefix: str
) -> None:
    rc = whole
    heartbeats = rc.shard_of(key_prefix + "{nodes}:alive").master
    ladders = rc.shard_of(key_prefix + "{rated}:table42:seq").master
    n1, n2, seed = await start_pair(rc, servers, avoid=heartbeats)
    roles: list[tuple[str, Any]] = [
        ("the bus seed of n1", lambda tables: seed),
        ("the heartbeats and the rated ladders", lambda tables: heartbeats),
        ("the first table's keys", lambda tables: rc.shard_of(
            key_prefix + "{t:" + tables[0][0] + "}:events").master),
    ]
    assert heartbeats == ladders  # one slot range: one kill covers both roles
    for i, (role, victim_of) in enumerate(roles):
        await rc.whole()
        games = await cross_tables(servers, n1, n2, f"r{i}")
        await asyncio.gather(*(play_moves(p, t, 4) for t, p in games))
        victim = victim_of(games)
        rc.kill(victim)
        # Played through the failover: each step is retried while the store is away.
        await asyncio.gather(*(play_moves(p, t, 2, retry_for=THROUGH_FAILOVER)
                               for t, p in games))
        await rc.failed_over(victim)
        overs = await asyncio.gather(*(resign(p, t) for t, p in games))
        try:
            await check_games(servers, store, n1, games, list(overs))
        except AssertionError as exc:
            raise AssertionError(f"master {victim} ({role}) killed: {exc}") from None


async def test_a_lagging_replica_promoted_takes_nothing_told_back(
    whole: ReplicatedCluster, servers: Cluster, store: aioredis.Redis, key_prefix: str
) -> None:
    rc = whole
    n1, n2, _seed = await start_pair(rc, servers, avoid=0)
    a = await servers.player("laga", n1)
    b = await servers.player("lagb", n2)
    table = await seat_two(a, b)
    players = [a, b]
    await play_moves(players, table, 4)

    # The table's replica stops reading (its link cut), a move is made: it reaches the master
    # only, so it is held, not announced; the master dies and the replica behind it takes over.
    events = key_prefix + "{t:" + table + "}:events"
    shard = rc.shard_of(events)
    assert shard.replica is not None
    master = aioredis.Redis(port=shard.master)
    stored = int(await master.llen(events))  # type: ignore[misc]
    rc.signal(shard.replica, signal.SIGSTOP)
    try:
        moved = asyncio.ensure_future(step(players, table, retry_for=THROUGH_FAILOVER))
        # Stored on the master, held by the owner: no player has it.
        await wait_until(lambda: any("not replicated in time" in n.log()
                                     for n in servers.nodes.values()),
                         timeout=THROUGH_FAILOVER,
                         what="the owner holding what its master's replica lacks")
        last = msgpack.unpackb(await master.lindex(events, -1))  # type: ignore[misc]
        assert int(await master.llen(events)) > stored  # type: ignore[misc]
        assert all(p.latest_state(table)[0] < last["v"] for p in players), \
            "a move was announced before its master's replica had it"
        rc.kill(shard.master)
    finally:
        rc.signal(shard.replica, signal.SIGCONT)
        await master.aclose()
    await moved
    await rc.failed_over(shard.master)
    await play_moves(players, table, 2, retry_for=THROUGH_FAILOVER)

    # The ladders' replica stops reading just before the game ends: the rating is settled on
    # its master only and held; the master dies; the replica behind it takes over.
    await rc.whole()
    await wait_until(lambda: waits_for_every_replica(n1), timeout=THROUGH_FAILOVER,
                     what="n1 counting the replica that joined")
    seq = key_prefix + "{rated}:table42:seq"
    ladder = rc.shard_of(seq)
    assert ladder.replica is not None
    await resign_offered(players, table)
    ladder_master = aioredis.Redis(port=ladder.master)
    rc.signal(ladder.replica, signal.SIGSTOP)
    try:
        ending = asyncio.ensure_future(resign(players, table))
        # Written on the master (and held): the settlement, or, when the table's keys are on
        # the same master, the result (the first write of the game's end, held there).
        same = rc.shard_of(events).master == ladder.master
        results = key_prefix + "{t:" + table + "}:results"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + THROUGH_FAILOVER
        while not await (ladder_master.exists(results) if same else ladder_master.get(seq)):
            assert loop.time() < deadline, "the game's end never reached the master"
            assert not ending.done() or ending.exception() is None, ending.exception()
            await asyncio.sleep(0.02)
        assert not any(p.of_type("game_over", table) for p in players), \
            "game_over announced before its rating was on a replica"
        rc.kill(ladder.master)
    finally:
        rc.signal(ladder.replica, signal.SIGCONT)
        await ladder_master.aclose()
    over = await ending
    await rc.failed_over(ladder.master)
    await check_games(servers, store, n1, [(table, players)], [over])


def waits_for_every_replica(node: Node) -> bool:
    """Whether ``node`` last counted a replica on each of the three masters."""
    counted = [line for line in node.log().splitlines() if "replicas per master:" in line]
    return bool(counted) and counted[-1].count(": 1") == 3


async def resign_offered(players: list[Player], table: str) -> None:
    """The player to act offers to resign; returns once the other one saw the offer."""
    state = freshest(players, table) or {}
    game = state.get("game") or {}
    actor = next(p for p in players if p.side(table) == game.get("to_act"))
    other = next(p for p in players if p is not actor)
    await actor.request({"type": "resign", "table": table})
    await wait_until(lambda: bool(other.of_type("resign_offered", table)),
                     timeout=TIMEOUT, what="the resignation offer")

"""A table rebuilt on another node from its Redis log (takeover): ``Table.restore``.

Two nodes on one Redis, in one process. Node A owns a table; it stops (its ``shutdown`` path:
the game is not ended) and node B rebuilds the table from the stored events. The players
resume by ``sync`` (or by reconnecting) and finish; the event versions go on without a gap.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, cast

import msgpack
import pytest
import redis.asyncio as aioredis
from server_helpers import (
    Client,
    RunningServer,
    StartServer,
    connect,
    play_out,
    register,
    scripted,
    seat_two,
)

from rating_plugin.store import RatingStore
from server.lobby.table import Table, TableStatus
from server.protocol.messages import TableMode


async def _log(redis: aioredis.Redis, key_prefix: str, table: str) -> list[dict[str, Any]]:
    raw = await cast("Awaitable[list[bytes]]", redis.lrange(
        f"{key_prefix}{{t:{table}}}:events", 0, -1))
    return sorted((cast(dict[str, Any], msgpack.unpackb(e)) for e in raw),
                  key=lambda e: int(e["v"]))


async def _take_over(node: RunningServer, table_id: str, now: float) -> Table:
    """What the ownership side does on a claim (claim the owner record with the epoch read,
    adopt the new epoch, read the log, restore, register), unless the node's own takeover
    scan got there first (a node that stops with a live peer hands its tables over at
    once)."""
    lobby = node.lobby
    persistence = lobby.persistence
    for _ in range(200):
        table = lobby.tables.get(table_id)
        if table is not None:
            return table
        lease = await persistence.lease(table_id)
        epoch = 0
        if lease is not None and not lease.done and lease.node != lobby.node_id:
            epoch, _previous = await persistence.claim(table_id, lobby.node_id, new=False,
                                                       epoch=lease.epoch)
        if epoch:
            persistence.adopt(table_id, epoch)
            events = await persistence.events_since(table_id, 0)
            snapshot = await persistence.snapshot(table_id)
            restored = await lobby.restore_table(table_id, snapshot, events)
            assert restored is not None
            return restored
        await asyncio.sleep(0.05)
    raise AssertionError(f"table {table_id} was not taken over by {lobby.node_id}")


async def _moves(clients: dict[int, Client], table: str, count: int) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    def enough(message: dict[str, Any]) -> bool:
        if message.get("type") == "moved" and message not in seen:
            seen.append(message)
        return len(seen) >= count

    return await play_out(clients, table, stop=enough)


async def test_a_table_restored_on_another_node_goes_on_at_the_next_version(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    a_node = await start_server(dice_factory=scripted(5), node_id="node-a")
    b_node = await start_server(dice_factory=scripted(9), node_id="node-b",
                                takeover_allowance=7.0)
    token_a = await register(a_node, "alice")
    a = await connect(a_node, token_a)
    b = await connect(b_node, await register(b_node, "bob"))  # bob's socket survives
    table, _start = await seat_two(a_node, a, b)
    await _moves({0: a, 1: b}, table, 4)
    live = a_node.lobby.tables[table]
    version = live.version
    state = live.state()
    await b.expect("moved", table=table)  # bob has seen every stored event by now

    await a_node.stop()  # shutdown path: timers stop, the log stays, nobody forfeits
    log = await _log(redis_client, key_prefix, table)
    assert [e["v"] for e in log] == list(range(1, version + 1))

    now = time.time()
    restored = await _take_over(b_node, table, now)
    assert restored.version == version
    assert restored.status is TableStatus.PLAYING
    # The game is the one A had: same position, cube, dice, strikes, score.
    assert restored.state()["game"] == state["game"]
    assert restored.state()["clock"]["strikes"] == state["clock"]["strikes"]
    assert restored.state()["clock"]["side"] == state["clock"]["side"]
    # The player to act: the time left at the last stored event (a fresh decision: all of
    # it) plus the allowance. Bob's socket is on node B: he stays connected; alice's was on
    # node A: she is away, in grace.
    assert restored.deadline == pytest.approx(now + 30.0 + 7.0)
    alice, bob = restored.seats
    assert alice is not None and not alice.nodes
    assert alice.grace_deadline == pytest.approx(now + 30.0)
    assert bob is not None and bob.nodes == {"node-b"} and bob.grace_deadline is None

    # Bob resumes by sync on his socket; alice reconnects through node B.
    synced = await b.request({"type": "sync", "table": table, "since": version})
    assert synced["type"] == "sync" and synced["complete"] and synced["v"] == version, synced
    a2 = await connect(b_node, token_a)
    resume = await a2.expect("resume", table=table)
    back = await b.expect("player_reconnected", table=table)
    assert back["v"] == version + 1  # the next event: no version skipped or repeated
    assert resume["v"] == version + 1
    a2.messages.append(resume)
    over = await play_out({0: a2, 1: b}, table)
    assert over["reason"] == "normal", over
    await a2.expect("rating", timeout=10.0)
    await b.expect("rating", timeout=10.0)
    store = RatingStore(redis_client, key_prefix)
    assert (await store.rating(over["winner"], "table42")).rating == 1516

    log = await _log(redis_client, key_prefix, table)
    assert [e["v"] for e in log] == list(range(1, over["v"] + 1))


@pytest.mark.parametrize("result_stored", [False, True])
async def test_a_game_over_not_yet_settled_is_settled_once_by_the_new_owner(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
    result_stored: bool,
) -> None:
    a_node = await start_server(dice_factory=scripted(5), node_id="node-a",
                                shutdown_timeout=0.2, lease_ttl=0.6, lease_renew=0.2)
    token_a, token_b = await register(a_node, "alice"), await register(a_node, "bob")
    a, b = await connect(a_node, token_a), await connect(a_node, token_b)
    table, _start = await seat_two(a_node, a, b)
    # Node A stores the game's end, then stops before the result and the ratings: its
    # rating store and its result write never come back.
    persistence = a_node.lobby.persistence
    ended = asyncio.Event()

    write_result = persistence.write_result

    async def stalled_result(*args: Any, **kwargs: Any) -> None:
        if result_stored:  # the result is written, the rating store never answers
            await write_result(*args, **kwargs)
        else:
            await persistence.flush()  # the game_over event reaches the log, no result
        ended.set()
        await asyncio.Event().wait()

    async def stalled_settle(*_args: Any, **_kwargs: Any) -> Any:
        await asyncio.Event().wait()

    persistence.write_result = stalled_result  # type: ignore[method-assign]
    a_node.lobby.ratings.settle = stalled_settle  # type: ignore[method-assign]
    playing = asyncio.ensure_future(play_out({0: a, 1: b}, table))
    await asyncio.wait_for(ended.wait(), 30.0)
    playing.cancel()
    assert a.of_type("game_over") == []  # stored, but not announced: not settled yet
    await a_node.stop()
    log = await _log(redis_client, key_prefix, table)
    assert log[-1]["type"] == "game_over"
    results_key = f"{key_prefix}{{t:{table}}}:results"
    assert await cast("Awaitable[int]", redis_client.llen(results_key)) == int(result_stored)

    # Node B starts after A stopped (no peer to hand over to: A's lease runs out).
    b_node = await start_server(dice_factory=scripted(9), node_id="node-b", lease_ttl=0.6,
                                lease_renew=0.2, takeover_scan=0.1)
    a2 = await connect(b_node, token_a)
    restored = await _take_over(b_node, table, time.time())
    assert restored.version == log[-1]["v"]
    b2 = await connect(b_node, token_b)  # resumes (the table lingers) and gets the rating
    ratings = [await a2.expect("rating", timeout=10.0), await b2.expect("rating", timeout=10.0)]
    assert sorted(r["change"] for r in ratings) == [-16, 16]
    store = RatingStore(redis_client, key_prefix)
    winner = log[-1]["winner"]
    assert (await store.rating(winner, "table42")).rating == 1516
    for _ in range(100):
        if await cast("Awaitable[int]", redis_client.llen(results_key)) == 1:
            break
        await asyncio.sleep(0.02)
    results = await cast("Awaitable[list[bytes]]", redis_client.lrange(results_key, 0, -1))
    assert len(results) == 1 and f'"game_id":"{table}-g1"'.encode() in results[0]

    # The new owner stored the game's record, rating changes included.
    record = await b_node.lobby.records.load(f"{table}-g1")
    assert record is not None and sorted(record["changes"]) == [-16, 16]
    assert record["events"][-1]["type"] == "game_over"
    await redis_client.delete(f"{key_prefix}{{g:{table}-g1}}:served")

    # Restored once more (a second takeover): already settled, nothing settles twice; the
    # record found missing is written again (without the rating changes).
    again = await Table.restore(b_node.lobby.table_deps, b_node.lobby.life, table, None,
                                await b_node.lobby.persistence.events_since(table, 0),
                                time.time())
    await asyncio.sleep(0.2)
    assert again.machine.settlement is None
    assert (await store.rating(winner, "table42")).rating == 1516
    assert await cast("Awaitable[int]", redis_client.llen(results_key)) == 1
    assert again.mode is TableMode.COMPETITIVE
    rewritten = await b_node.lobby.records.load(f"{table}-g1")
    assert rewritten is not None and rewritten["changes"] == [None, None]
    assert rewritten["events"] == record["events"]
    again.shutdown()


async def test_a_fenced_table_refuses_commands_and_announces_nothing(
    start_server: StartServer,
) -> None:
    node = await start_server(dice_factory=scripted(5))
    a = await connect(node, await register(node, "alice"))
    b = await connect(node, await register(node, "bob"))
    table, _ = await seat_two(node, a, b)
    live = node.lobby.tables[table]
    live.fenced()
    refused = await a.request({"type": "roll", "table": table})
    assert refused["type"] == "error" and refused["code"] == "unavailable", refused
    assert live.timers.is_idle


async def test_a_match_restored_between_two_games_starts_the_next_game(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    a_node = await start_server(dice_factory=scripted(5), node_id="node-a",
                                next_game_delay=60.0)
    b_node = await start_server(dice_factory=scripted(9), node_id="node-b",
                                next_game_delay=0.05)
    a = await connect(b_node, await register(b_node, "alice"))
    b = await connect(b_node, await register(b_node, "bob"))
    # A match table owned by node A, both players' sockets on node B.
    table = await a_node.lobby.start_rated_game("alice", "bob", match_length=3)
    await a.expect("game_start", table=table)
    await b.expect("game_start", table=table)
    first = await play_out({0: a, 1: b}, table)
    assert first["game_no"] == 1
    live = a_node.lobby.tables[table]
    for _ in range(100):  # the result is written, the next game waits (60 s)
        if not live.machine.finishing:
            break
        await asyncio.sleep(0.02)
    assert live.machine.next_game is not None
    version = live.version
    await a_node.stop()

    restored = await _take_over(b_node, table, time.time())
    # Restored at the version it stopped at; B's own takeover scan may have got there first,
    # and then the next game (B's delay: 0.05 s) may have started already.
    assert restored.version in (version, version + 1)
    # Already settled (its result is stored): not again; the next game starts on B.
    start = await a.expect("game_start", table=table, timeout=10.0)
    await b.expect("game_start", table=table, timeout=10.0)
    assert start["v"] == version + 1 and start["game_no"] == 2
    assert start["state"]["match"]["score"] == first["state"]["match"]["score"]
    results_key = f"{key_prefix}{{t:{table}}}:results"
    assert await cast("Awaitable[int]", redis_client.llen(results_key)) == 1
    restored.shutdown()


async def test_sync_of_a_restored_table_is_complete_only_with_every_version(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """After a takeover, ``sync`` answers ``complete: true`` only when its events are every
    version after ``since`` up to the table's: from the memory log rebuilt from Redis, from
    the Redis log, and not when asked from beyond the table's version (the client holds
    versions this table does not: it rebuilds from ``state``)."""
    a_node = await start_server(dice_factory=scripted(5), node_id="node-a")
    b_node = await start_server(dice_factory=scripted(9), node_id="node-b")
    a = await connect(a_node, await register(a_node, "alice"))
    b = await connect(b_node, await register(b_node, "bob"))
    table, _start = await seat_two(a_node, a, b)
    await _moves({0: a, 1: b}, table, 4)
    version = a_node.lobby.tables[table].version
    await b.expect("moved", table=table)
    await a_node.stop()
    restored = await _take_over(b_node, table, time.time())
    assert restored.version == version

    for since in (0, 1, version - 3, version - 1, version):
        synced = await b.request({"type": "sync", "table": table, "since": since})
        assert [e["v"] for e in synced["events"]] == list(range(since + 1, version + 1))
        assert synced["complete"] is True, (since, synced["complete"])
        assert synced["v"] == version
    ahead = await b.request({"type": "sync", "table": table, "since": version + 5})
    assert ahead["events"] == [] and ahead["complete"] is False and ahead["v"] == version
    # A memory log that does not reach the version (its newest event dropped): not complete.
    restored.recent.pop()
    short = await b.request({"type": "sync", "table": table, "since": version - 2})
    assert [e["v"] for e in short["events"]] == [version - 1]
    assert short["complete"] is False

"""A gap in a table's log never kills the table (server/lobby/takeover.py, fenced_events.lua):
the store losing the last events it acknowledged (a Redis replica promoted before it had them)
makes the live owner write them again from memory; a node taking over a log that misses
events carries on from the events before the gap and tells every player (``table_rewound``
with the full state); a client that saw more than the table now holds rebuilds from a
``sync`` answer below what it asked for. Two in-process nodes on the test's Redis; the
store's loss is made by hand, as a promoted replica would show it (the real failover is
tests/failover/test_cluster_replicas.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
import redis.asyncio as aioredis
from server_helpers import (
    connect,
    default_decision,
    eventually,
    latest_state,
    register,
    scripted,
    seat_two,
)
from test_ownership import StartNodes, freeze

from server.app import PERSISTENCE
from server.client.connection import TableView
from server.client.wire import TABLE_REPLIES
from server.lobby.takeover import before_gap
from server.store.keys import Keys
from server.store.persistence import _aw


async def _log(redis: aioredis.Redis, keys: Keys, table: str) -> list[dict[str, Any]]:
    return [msgpack.unpackb(e) for e in
            await _aw(redis.lrange(keys.table_events(table), 0, -1))]


async def _play(clients: list[Any], table: str, moves: int) -> None:
    """``moves`` decisions, each waited for at both players."""
    for _ in range(moves):
        state = latest_state(clients[0], table)
        assert state is not None
        version = max(m.get("v", 0) for m in clients[0].messages if m.get("table") == table)
        game = state["game"]
        await clients[game["to_act"]].send({**default_decision(game), "table": table})
        for client in clients:
            await eventually(_past(client, table, version))


def _past(client: Any, table: str, version: int) -> Callable[[], bool]:
    """Whether ``client`` got an event of ``table`` after ``version``."""
    return lambda: any(m.get("table") == table and m.get("v", 0) > version
                       for m in client.messages)


def _versions(client: Any, table: str) -> list[int]:
    seen = [int(m["v"]) for m in client.messages
            if m.get("table") == table and "v" in m and m.get("type") not in TABLE_REPLIES]
    return sorted(set(seen))


async def _store_goes_back(start_nodes: StartNodes, redis_client: aioredis.Redis,
                           key_prefix: str) -> tuple[Any, Any, Any, str, list[dict[str, Any]]]:
    """A game of alice and bob on n1, four decisions in; then the store goes back three
    versions, the table's owner record too (a replica that missed them). The node, both
    players, the table and its log as it was."""
    one, _two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    table, _ = await seat_two(one, a, b)
    await _play([a, b], table, 4)
    await one.app[PERSISTENCE].flush()
    keys = Keys(key_prefix)
    told = await _log(redis_client, keys, table)
    await _aw(redis_client.ltrim(keys.table_events(table), 0, len(told) - 4))
    await _aw(redis_client.hset(keys.table_lease(table), "v", told[-1]["v"] - 3))
    return one, a, b, table, told


async def test_the_owner_writes_again_what_the_store_lost(
    start_nodes: StartNodes, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one, a, b, table, told = await _store_goes_back(start_nodes, redis_client, key_prefix)
    keys = Keys(key_prefix)
    await _play([a, b], table, 2)
    await one.app[PERSISTENCE].flush()
    versions = [e["v"] for e in await _log(redis_client, keys, table)]
    assert versions == list(range(1, versions[-1] + 1))
    assert versions[-1] > told[-1]["v"]
    for client in (a, b):
        seen = _versions(client, table)
        assert seen == list(range(seen[0], seen[-1] + 1))
        assert not client.of_type("error")


async def test_a_log_with_a_gap_is_taken_over_from_before_it(
    start_nodes: StartNodes, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"))
    table, _ = await seat_two(one, a, b)  # owned by n1; bob plays through n2
    await _play([a, b], table, 6)
    await one.app[PERSISTENCE].flush()
    keys = Keys(key_prefix)
    logged = await _log(redis_client, keys, table)
    last = logged[-1]["v"]
    # Two versions in the middle are missing, as after a failover that lost them while the
    # owner (now dead) wrote on.
    for event in logged[-4:-2]:
        await _aw(redis_client.lrem(keys.table_events(table), 1, msgpack.packb(event)))
    freeze(one)
    rewound = await b.expect("table_rewound", table=table)
    assert rewound["v"] == last - 4 and rewound["logged"] == last
    assert rewound["state"]["status"] == "playing"
    # The log is the events before the gap, and the table goes on from there.
    versions = [e["v"] for e in await _log(redis_client, keys, table)]
    assert versions == list(range(1, last - 3))
    a2 = await connect(two, a.token)
    synced = await a2.request({"type": "sync", "table": table, "since": last})
    assert synced["type"] == "sync" and last - 4 <= synced["v"] < last, synced
    game = synced["state"]["game"]
    mover = (a2, b)[game["to_act"]]
    answer = await mover.request({**default_decision(game), "table": table})
    assert answer.get("type") != "error", answer
    await eventually(lambda: any(m.get("v", 0) > synced["v"] for m in b.messages
                                 if m.get("table") == table and m.get("type") != "sync"))
    await two.app[PERSISTENCE].flush()
    versions = [e["v"] for e in await _log(redis_client, keys, table)]
    assert versions == list(range(1, versions[-1] + 1)) and versions[-1] > synced["v"]


def test_before_gap_keeps_the_events_up_to_the_first_missing_version() -> None:
    events = [{"v": v} for v in (3, 4, 5, 7, 8)]
    assert before_gap(events) == events[:3]
    assert before_gap(events[:3]) == events[:3]
    assert before_gap([]) == []


def test_a_sync_answer_below_what_was_asked_replaces_the_view() -> None:
    """The client library takes a ``sync`` answer whose ``v`` is below the ``since`` asked
    (the table went back: a store failover lost versions) as the table's state."""
    from server.client import Client

    client = Client("ws://127.0.0.1:1/ws")
    view = TableView("t")
    view.v, view.state = 18, {"old": True}
    client._synced(view, {"type": "sync", "table": "t", "since": 18, "v": 13,
                          "complete": False, "events": [], "state": {"new": True}})
    assert (view.v, view.state) == (13, {"new": True})
    client._synced(view, {"type": "sync", "table": "t", "since": 12, "v": 12,
                          "complete": True, "events": [], "state": {"older": True}})
    assert (view.v, view.state) == (13, {"new": True})  # an answer to an older ask


async def test_a_gap_nothing_can_fill_ends_the_table_with_a_reason(
    start_nodes: StartNodes, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """The store lost versions that the owner no longer holds in memory either: the table
    ends with ``table_closed`` (reason ``log_lost``) at every player, and its seats are
    free (a player can sit down elsewhere at once)."""
    one, a, b, table, _told = await _store_goes_back(start_nodes, redis_client, key_prefix)
    one.lobby.tables[table].events.window.clear()  # as if they had left the window
    state = latest_state(a, table)
    assert state is not None
    game = state["game"]
    await (a, b)[game["to_act"]].send({**default_decision(game), "table": table})
    for client in (a, b):
        closed = await client.expect("table_closed", table=table)
        assert closed["reason"] == "log_lost"
    created = await a.request({"type": "create_table", "mode": "competitive",
                               "match_length": 0})
    assert created["type"] == "table_created", created

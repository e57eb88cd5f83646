"""A node that lost its tables without knowing it yet (paused past its leases: here its
ownership, bus and matchmaking tasks are stopped, so it neither renews nor hears the peers)
must not settle, list or keep a request unanswered; a draining node never claims back what it
handed over. Two in-process nodes on one Redis, short leases."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import redis.asyncio as aioredis
from server_helpers import RunningServer, connect, default_decision, register, scripted, seat_two

from server.app import BUS, OWNERSHIP, PERSISTENCE, RATINGS
from server.store.keys import Keys
from server.tick import TICK

StartNodes = Callable[..., Awaitable[list[RunningServer]]]


def freeze(server: RunningServer) -> None:
    """The node stops renewing and listening, as a paused process would (its sockets and
    tables still run when something reaches them)."""
    server.app[TICK].halt()  # every periodic duty: heartbeat, scan, matchmaking...
    for task in server.app[BUS]._tasks:
        task.cancel()


async def until(check: Callable[[], Awaitable[bool]], tries: int = 500) -> None:
    for _ in range(tries):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def taken_over(one: RunningServer, two: RunningServer, table: str) -> None:
    async def check() -> bool:
        lease = await two.app[PERSISTENCE].lease(table)
        return (lease is not None and lease.node != one.lobby.node_id
                and table in two.lobby.tables)
    await until(check)


async def test_a_stale_owner_settles_nothing(
    start_nodes: StartNodes, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    table, start = await seat_two(one, a, b)
    game_id = str(start.get("game_id") or f"{table}-g1")
    await one.app[PERSISTENCE].flush()
    freeze(one)
    await taken_over(one, two, table)
    # A command still reaches the stale owner (queued before the takeover): alice leaves.
    await a.send({"type": "leave", "table": table})

    async def gone() -> bool:
        return table not in one.lobby.tables
    await until(gone, 200)
    await asyncio.sleep(0.3)
    raw = await redis_client.lrange(Keys(key_prefix).table_events(table), 0, -1)  # type: ignore[misc]
    events: list[dict[str, Any]] = [msgpack.unpackb(e) for e in raw]
    assert not any(e["type"] == "game_over" for e in events)
    assert await two.app[RATINGS].settlement(game_id) is None


async def test_a_request_held_at_a_fenced_table_gets_its_one_answer(
    start_nodes: StartNodes,
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    table, _ = await seat_two(one, a, b)
    await one.app[PERSISTENCE].flush()
    freeze(one)

    async def there() -> bool:
        return table in two.lobby.tables
    await until(there)
    latest = [m for m in a.messages if m.get("table") == table and "state" in m][-1]
    game = latest["state"]["game"]
    mover = (a, b)[game["to_act"]]
    await mover.send({**default_decision(game), "table": table, "id": 4242})

    async def gone() -> bool:
        return table not in one.lobby.tables
    await until(gone, 200)
    await asyncio.sleep(0.5)
    answers = [m for m in mover.messages if m.get("ref") == 4242]
    assert len(answers) == 1, answers
    assert answers[0]["type"] == "error" and answers[0]["code"] == "unavailable"
    assert answers[0]["retry_after"] > 0


async def test_a_stale_owner_does_not_list_a_table_cleaned_up_elsewhere(
    start_nodes: StartNodes,
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    created = await a.request({"type": "create_table", "mode": "competitive",
                               "match_length": 0})
    table = created["table"]
    await one.app[PERSISTENCE].flush()
    freeze(one)

    async def cleaned() -> bool:
        lease = await two.app[PERSISTENCE].lease(table)
        return lease is not None and lease.done
    await until(cleaned)
    await b.send({"type": "join", "table": table})  # play starts on the stale node

    async def gone() -> bool:
        return table not in one.lobby.tables
    await until(gone, 200)
    await asyncio.sleep(0.5)
    listed = [t for t in await two.app[PERSISTENCE].listed_tables() if t["table"] == table]
    assert not listed


async def test_a_draining_node_never_claims_back_what_it_handed_over(
    start_nodes: StartNodes,
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    two.app[TICK].halt()  # the peer stays quiet: only one could claim
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"))
    table, _ = await seat_two(one, a, b)
    handed = await one.lobby.hand_over()
    assert table in handed
    assert table not in await one.app[OWNERSHIP].scan_once()

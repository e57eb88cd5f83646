"""Busy is not dead: a node whose event loop is busy keeps its tables and its players; one whose
loop is stuck past ``loop_stuck_limit`` is taken over like a dead one, and fenced when it
comes back. Real ``python -m server`` processes on one Redis, real protocol clients.

The owner's loop is kept busy by the harness's stall hook (``nodes.STALL_HOOK``: a SIGUSR2
handler that runs Python on the loop's thread for so many seconds, as a long request does;
the node's pulse thread goes on, as it would). The harness's ownership timings are short
(``lease_ttl`` 1.5 s): a stall of 6 s is four leases long.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis
from nodes import (
    LEASE_TTL,
    TAKEOVER_BOUND,
    Cluster,
    Player,
    default_decision,
    freshest,
    play_moves,
    play_to_end,
    seat_two,
)
from test_failover import (
    assert_log_contiguous,
    assert_saw_every_version_once,
    assert_settled_once,
    game_id_of,
)

STALL = 6.0
STAY = {"silence_timeout": None, "ping_interval": None}
"""Clients that keep their sockets on a silent node (no silence watch, no pings)."""


async def owner_of(cluster: Cluster, redis: aioredis.Redis, table: str) -> str:
    node = await redis.hget(cluster.key(f"{{t:{table}}}:lease"), "node")  # type: ignore[misc]
    return "" if node is None else node.decode()


async def decide(players: list[Player], table: str) -> dict[str, Any]:
    """Send the decision the table awaits now, through the deciding player's socket."""
    state = freshest(players, table)
    assert state is not None and state.get("game") is not None, state
    game = state["game"]
    actor = next(p for p in players if p.side(table) == int(game["to_act"]))
    return await actor.request({**default_decision(game), "table": table})


@pytest.mark.timeout(180)
async def test_a_busy_owner_keeps_its_tables_and_its_players_only_wait(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """The owner's loop is busy for four leases: nobody takes its table over, nobody is
    told ``held``, and a decision sent meanwhile is answered once the loop is back."""
    n1 = await cluster.start("n1", stall=STALL)
    n2 = await cluster.start("n2")
    a = await cluster.player("alice", n1, **STAY)
    b = await cluster.player("bob", n1, **STAY)
    table = await seat_two(a, b)
    await play_moves([a, b], table, 6)
    assert await owner_of(cluster, redis_client, table) == "n1"

    loop = asyncio.get_running_loop()
    n1.stall()
    stalled_at = loop.time()
    await asyncio.sleep(0.2)
    answer = asyncio.ensure_future(decide([a, b], table))  # waits for the busy loop
    owners = set()
    while loop.time() < stalled_at + STALL + 2 * LEASE_TTL:
        owners.add(await owner_of(cluster, redis_client, table))
        await asyncio.sleep(0.1)
    assert owners == {"n1"}, f"the table changed hands: {owners}"
    assert (await answer)["type"] != "error"

    over = await play_to_end([a, b], table)
    assert over["reason"] == "normal", over
    for p in (a, b):
        assert not p.of_type("held", table), f"{p.player} was told held: a busy node"
    assert "is gone" not in n2.log(), n2.log()[-2000:]
    assert "heartbeat had run out" not in n1.log(), n1.log()[-2000:]
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n1, [a, b], game_id_of(over))


@pytest.mark.timeout(180)
async def test_an_owner_stuck_past_the_limit_is_taken_over_and_fenced(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """With ``loop_stuck_limit`` 2 s, a loop stuck for 6 s counts as hung: the peer takes
    the table over once the limit has passed; the old owner, back, writes nothing more of it
    (fenced) and sends its players' requests on to the new owner: the game ends normally."""
    n1 = await cluster.start("n1", stall=STALL, loop_stuck_limit=2.0)
    n2 = await cluster.start("n2")
    a = await cluster.player("alice", n1, **STAY)
    b = await cluster.player("bob", n1, **STAY)
    table = await seat_two(a, b)
    await play_moves([a, b], table, 6)

    loop = asyncio.get_running_loop()
    n1.stall()
    stalled_at = loop.time()
    while loop.time() < stalled_at + STALL + TAKEOVER_BOUND:
        if await owner_of(cluster, redis_client, table) == "n2":
            break
        await asyncio.sleep(0.05)
    assert await owner_of(cluster, redis_client, table) == "n2", "no takeover"
    assert loop.time() - stalled_at < STALL, "taken over only once the loop was back"

    over = await play_to_end([a, b], table, retry_for=TAKEOVER_BOUND)
    assert over["reason"] == "normal", over
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n2, [a, b], game_id_of(over))

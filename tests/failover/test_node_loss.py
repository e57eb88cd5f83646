"""Nobody is charged for a node's fault: the owner node of a game is paused (SIGSTOP) with
both players' sockets on it, another node takes the table over, and the game goes on and
ends normally. Real ``python -m server`` processes on one Redis, real protocol clients.

The pauses are scaled down with the timings: the owner counts as dead after ``LEASE_TTL``
(1.5 s), the disconnect grace (``--grace-period``) is shorter than the pause, and the
node-loss grace (``--node-loss-grace``) is longer than it. The rules about the graces (which
one a lost node's players get, from when, what happens at its end) are tested in virtual time
below the socket: tests/server/test_table_node_loss.py. Players who stay connected
to the paused node (no silence watch) are re-attached when it comes back; players with the
client library's silence watch (its default) leave the silent node for another by
themselves.
"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from nodes import TAKEOVER_BOUND, Cluster, play_moves, play_to_end, seat_two, wait_until
from test_failover import (
    assert_log_contiguous,
    assert_saw_every_version_once,
    assert_settled_once,
    game_id_of,
)

from server.client.connection import SILENCE_TIMEOUT

NODE_LOSS_GRACE = 120.0


async def owner_of(cluster: Cluster, redis: aioredis.Redis, table: str) -> str:
    node = await redis.hget(cluster.key(f"{{t:{table}}}:lease"), "node")  # type: ignore[misc]
    return "" if node is None else node.decode()


async def test_a_paused_owner_with_its_players_on_it_forfeits_nobody(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """The players' sockets stay open on the paused owner (as a client without a silence
    watch does); the peer that takes the table over gives them the node-loss grace, and the
    old owner, back, finds itself fenced and re-attaches them to the new owner: they play on
    through their old sockets (forwarded) and the game ends normally."""
    pause, grace = 12.0, 3.0  # the pause outlasts the disconnect grace
    cluster.flags.update(grace_period=grace, node_loss_grace=NODE_LOSS_GRACE)
    n1, n2 = await cluster.start_many(["n1", "n2"])
    stay = {"silence_timeout": None, "ping_interval": None}  # the sockets stay open
    a = await cluster.player("alice", n1, **stay)
    b = await cluster.player("bob", n1, **stay)
    table = await seat_two(a, b)
    await play_moves([a, b], table, 6)
    assert await owner_of(cluster, redis_client, table) == "n1"

    n1.pause()
    try:
        loop = asyncio.get_running_loop()
        paused_at = loop.time()
        for _ in range(int(TAKEOVER_BOUND / 0.05)):
            if await owner_of(cluster, redis_client, table) == "n2":
                break
            await asyncio.sleep(0.05)
        assert await owner_of(cluster, redis_client, table) == "n2", "no takeover"
        # The pause is the scenario: the players' node says nothing for that long.
        await asyncio.sleep(max(0.0, paused_at + pause - loop.time()))
    finally:
        n1.resume()

    over = await play_to_end([a, b], table, retry_for=TAKEOVER_BOUND)
    assert over["reason"] == "normal", over
    for p in (a, b):
        assert not p.is_closed, f"{p.player}'s socket on the old owner was closed"
        assert not [m for m in p.of_type("game_over", table) if m["reason"] != "normal"]
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n2, [a, b], game_id_of(over))


async def test_the_client_library_leaves_a_silent_node_and_plays_on(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """Both players are on the owner when it is paused for good: each client hears nothing
    for ``SILENCE_TIMEOUT`` (its application pings go unanswered), drops the socket,
    reconnects to the other node it was given and catches up; the game ends normally."""
    cluster.flags.update(grace_period=3.0, node_loss_grace=NODE_LOSS_GRACE)
    n1, n2 = await cluster.start_many(["n1", "n2"])
    options = {"auto_reconnect": True, "urls": [n2.ws_url]}
    a = await cluster.player("alice", n1, **options)
    b = await cluster.player("bob", n1, **options)
    table = await seat_two(a, b)
    await play_moves([a, b], table, 6)

    n1.pause()
    try:
        await wait_until(lambda: all(p.url == n2.ws_url and p.connected for p in (a, b)),
                         timeout=SILENCE_TIMEOUT + TAKEOVER_BOUND,
                         what="both players reconnected to n2")
        assert a.silences == 1 and b.silences == 1
        over = await play_to_end([a, b], table, retry_for=TAKEOVER_BOUND)
    finally:
        n1.resume()
    assert over["reason"] == "normal", over
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n2, [a, b], game_id_of(over))

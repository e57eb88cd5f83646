"""Hardening, rating delivery: a rating event is delivered once.

As it was found: a rating event received live came again on the next connection (it was also
put in the inbox). Now an event written to one of the player's sockets leaves the inbox; an
event for a player connected nowhere waits there until a connection takes it, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import cast

import redis.asyncio as aioredis
from server_helpers import Client, StartServer, connect, play_out, register, scripted, seat_two


async def _settled(client: Client) -> None:
    """Everything the server had queued for ``client`` on connecting has arrived."""
    pong = await client.request({"type": "ping"})
    assert pong["type"] == "pong"
    await asyncio.sleep(0.2)


async def _inbox(redis: aioredis.Redis, prefix: str, player: str) -> list[bytes]:
    return await cast("Awaitable[list[bytes]]",
                      redis.lrange(f"{prefix}{{p:{player}}}:inbox", 0, -1))


async def test_a_rating_event_received_live_is_not_delivered_again(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one = await start_server(dice_factory=scripted(5), node_id="once-a")
    two = await start_server(dice_factory=scripted(5), node_id="once-b")
    tokens = {p: await register(one, p) for p in ("alice", "bob")}
    a = await connect(one, tokens["alice"])
    b = await connect(two, tokens["bob"])  # the other node: delivered through the bus
    table, _ = await seat_two(one, a, b)
    await play_out({0: a, 1: b}, table)
    live = {p: await c.expect("rating", table=table) for p, c in (("alice", a), ("bob", b))}
    assert all(isinstance(e["event_id"], str) for e in live.values())
    for _ in range(50):
        if not any([await _inbox(redis_client, key_prefix, p) for p in live]):
            break
        await asyncio.sleep(0.05)
    for player in live:
        assert await _inbox(redis_client, key_prefix, player) == []
    for server in (one, two):  # reconnect anywhere: nothing comes again
        for player in live:
            again = await connect(server, tokens[player])
            await _settled(again)
            assert again.of_type("rating") == []
            await again.close()


async def test_an_event_for_an_absent_player_waits_in_the_inbox_and_comes_once(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    server = await start_server(dice_factory=scripted(5), grace_period=0.5)
    tokens = {p: await register(server, p) for p in ("alice", "bob")}
    a = await connect(server, tokens["alice"])
    b = await connect(server, tokens["bob"])
    table, _ = await seat_two(server, a, b)
    await b.close()  # bob is gone; his grace runs out and he forfeits
    over = await a.expect("game_over", table=table)
    assert over["winner"] == "alice"
    await a.expect("rating", table=table)
    for _ in range(50):
        if await _inbox(redis_client, key_prefix, "bob"):
            break
        await asyncio.sleep(0.05)
    assert len(await _inbox(redis_client, key_prefix, "bob")) == 1

    first = await connect(server, tokens["bob"])
    event = await first.expect("rating")
    assert event["event_id"].endswith(":bob")
    await _settled(first)
    await first.close()
    second = await connect(server, tokens["bob"])
    await _settled(second)
    assert second.of_type("rating") == []
    assert await _inbox(redis_client, key_prefix, "bob") == []
    # An acknowledgement of an id already delivered is answered and changes nothing.
    reply = await second.request({"type": "ack_events", "events": [event["event_id"]]})
    assert reply["type"] == "ack", reply

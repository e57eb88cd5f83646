"""A store emptied (FLUSHALL) or replaced (a fresh, empty Redis at the same address) under
live games: every node notices within a health check, ends its tables with ``table_closed``
(reason ``store_lost``), closes every authenticated socket with 4001 ("store lost"), accepts
nothing from the vanished tokens, and goes on serving new accounts.

A private redis-server of the test's own (never the shared one) is flushed, or stopped,
wiped and started again.
"""

from __future__ import annotations

import contextlib

import pytest
import redis.asyncio as aioredis
from hardening_helpers import PrivateRedis, ServerProcess, http_json
from server_helpers import RunningServer, StartServer, connect, register, seat_two

from server.client import Client as LibraryClient
from server.client import register as library_register
from server.client.connection import ClientError, ConnectionLost
from server.net.connection import CLOSE_TOKEN_ENDED

TOLD_WITHIN = 10.0


async def _flushall(url: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        await client.flushall()
    finally:
        await client.aclose()


async def _after_the_loss(server: RunningServer, old_token: str, name: str) -> None:
    """Nothing is accepted under the vanished token; the node serves a new account."""
    status, _h, _b = await http_json("GET", server.http + "/api/me",
                                     headers={"Authorization": f"Bearer {old_token}"})
    assert status == 401
    with pytest.raises(ClientError, match="HTTP 401"):
        await connect(server, old_token)
    # The same name registers again (a new account); its socket is its own.
    fresh = await connect(server, await register(server, name))
    created = await fresh.request({"type": "create_table", "mode": "boosted"})
    assert created["type"] == "table_created", created
    await fresh.close()


async def test_flushall_under_live_games_ends_them_and_closes_every_socket(
    private_redis: PrivateRedis, start_server: StartServer
) -> None:
    one = await start_server(node_id="lost-a", redis_url=private_redis.url,
                             redis_check_interval=0.2)
    two = await start_server(node_id="lost-b", redis_url=private_redis.url,
                             redis_check_interval=0.2)
    tokens = {name: await register(one, name) for name in ("alice", "bob", "carol", "dave")}
    alice = await connect(one, tokens["alice"])
    bob = await connect(one, tokens["bob"])
    carol = await connect(two, tokens["carol"], hello=True)  # her table lives on node two
    dave = await connect(one, tokens["dave"])  # dave's socket is on the other node
    table_one, _ = await seat_two(one, alice, bob)
    table_two, _ = await seat_two(two, carol, dave)

    await _flushall(private_redis.url)

    for client, table in ((alice, table_one), (bob, table_one), (carol, table_two)):
        closed = await client.expect("table_closed", timeout=TOLD_WITHIN, table=table)
        assert closed["reason"] == "store_lost", closed
    for client in (alice, bob, carol, dave):
        assert await client.wait_closed(timeout=TOLD_WITHIN) == CLOSE_TOKEN_ENDED
        assert client.ws is not None and client.ws.close_reason == "store lost"
        assert client.of_type("game_over") == []
    assert one.lobby.tables == {} and two.lobby.tables == {}
    await _after_the_loss(one, tokens["alice"], "alice")
    await _after_the_loss(two, tokens["carol"], "carol")


async def test_a_fresh_empty_redis_under_live_games_ends_them(
    private_redis: PrivateRedis, start_server: StartServer
) -> None:
    server = await start_server(redis_url=private_redis.url, redis_check_interval=0.2)
    tokens = {name: await register(server, name) for name in ("alice", "bob")}
    alice = await connect(server, tokens["alice"])
    bob = await connect(server, tokens["bob"])
    table, _ = await seat_two(server, alice, bob)

    private_redis.sigterm()
    private_redis.wipe()
    private_redis.start()  # same address, nothing in it

    for client in (alice, bob):
        closed = await client.expect("table_closed", timeout=TOLD_WITHIN, table=table)
        assert closed["reason"] == "store_lost", closed
        assert await client.wait_closed(timeout=TOLD_WITHIN) == CLOSE_TOKEN_ENDED
    await _after_the_loss(server, tokens["alice"], "alice")


async def test_a_command_sent_right_after_the_flush_is_not_played(
    private_redis: PrivateRedis, start_server: StartServer
) -> None:
    """The old socket's resign right after the flush: refused or unanswered, never acked
    as a game's end, and its socket is closed."""
    server = await start_server(redis_url=private_redis.url, redis_check_interval=0.2)
    alice = await connect(server, await register(server, "alice"))
    bob = await connect(server, await register(server, "bob"))
    table, _ = await seat_two(server, alice, bob)
    await _flushall(private_redis.url)
    with contextlib.suppress(ConnectionLost):  # the socket may be closed already
        await alice.send({"type": "resign", "table": table, "kind": "single"})
    assert await alice.wait_closed(timeout=TOLD_WITHIN) == CLOSE_TOKEN_ENDED
    assert await bob.wait_closed(timeout=TOLD_WITHIN) == CLOSE_TOKEN_ENDED
    for client in (alice, bob):
        assert client.of_type("game_over") == []
        assert [m["reason"] for m in client.of_type("table_closed")] == ["store_lost"]


async def test_two_node_processes_and_a_flushall(private_redis: PrivateRedis,
                                                 key_prefix: str) -> None:
    """The same with two ``python -m server`` processes: a game whose players sit on
    different nodes; each node notices on its own, one new identity is written."""
    common = ("--redis-url", private_redis.url, "--key-prefix", key_prefix,
              "--redis-check-interval", "0.2", "--scrypt-n", "2")
    nodes = [ServerProcess(*common, "--node-id", name) for name in ("proc-a", "proc-b")]
    try:
        for node in nodes:
            await node.start()
        urls = [f"ws://127.0.0.1:{node.port}/ws" for node in nodes]
        tokens = [await library_register(urls[0], name, "correct horse")
                  for name in ("alice", "bob")]
        alice = await LibraryClient.connect(urls[0], tokens[0])
        bob = await LibraryClient.connect(urls[1], tokens[1])
        table = await alice.create_table(mode="competitive")
        await bob.join(table)
        await alice.wait_for("game_start", table=table, timeout=TOLD_WITHIN)

        await _flushall(private_redis.url)

        closed = await alice.wait_for("table_closed", table=table, timeout=TOLD_WITHIN)
        assert closed.raw["reason"] == "store_lost", closed.raw
        for client in (alice, bob):
            with pytest.raises(ConnectionLost):
                while True:
                    event = await client.next_event(timeout=TOLD_WITHIN)
                    assert event.type != "game_over", event.raw
            assert client.close_code == CLOSE_TOKEN_ENDED
        redis = aioredis.Redis.from_url(private_redis.url)
        try:
            stored = await redis.get(f"{key_prefix}store:id")
        finally:
            await redis.aclose()
        assert stored is not None  # written again (SET NX: one id for both nodes)
        for node in nodes:
            status, _h, _b = await http_json(
                "GET", node.http + "/api/me", headers={"Authorization": f"Bearer {tokens[0]}"})
            assert status == 401
            fresh = await library_register(f"ws://127.0.0.1:{node.port}/ws",
                                           f"new{node.port}", "correct horse")
            client = await LibraryClient.connect(f"ws://127.0.0.1:{node.port}/ws", fresh)
            assert await client.create_table(mode="boosted")
            await client.close()
    finally:
        for node in nodes:
            node.stop()

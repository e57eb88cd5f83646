"""A table holds while Redis is away, over sockets: a private redis-server of the test (never
the shared one) is paused (SIGSTOP) during a live game. The players are told (``held``, then
``resumed``), requests and ``hello`` are refused with ``unavailable`` and ``retry_after``, a
socket closed meanwhile counts as gone once Redis is back, nobody gets a strike, and the game
is played to its end.

The rules about time (a hold longer than the decision clock costs nobody a strike, a clock
running out before the outage is noticed costs nothing, Redis killed and started again from
its file) are tested below the socket in virtual time: tests/server/test_table_hold.py.
Every wait here waits for a message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hardening_helpers import PrivateRedis, ServerProcess
from server_helpers import (
    Client,
    Reachable,
    StartServer,
    connect,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.client import ClientError

OPTIONS: dict[str, Any] = {"redis_check_interval": 0.2}


async def _a_few_moves(a: Client, b: Client, table: str) -> None:
    """Play until the table's version 8 arrives; nobody has acted on it yet."""
    await play_out({0: a, 1: b}, table, stop=lambda m: int(m.get("v") or 0) >= 8)


async def _refused_while_held(server: Reachable, client: Client, token: str) -> None:
    """A request: ``unavailable`` with ``retry_after``. A new socket: its bearer token is
    refused before the upgrade (503), its ``hello`` gets ``unavailable`` with ``retry_after``
    and a clean close (1013, try again later)."""
    refused = await client.request({"type": "list_tables"})
    assert refused["type"] == "error" and refused["code"] == "unavailable", refused
    assert refused["retry_after"] >= 1, refused
    with pytest.raises(ClientError, match="HTTP 503"):
        await connect(server, token)
    late = await connect(server, token, hello=True, welcome=False)
    error = await late.expect("error", timeout=10.0)
    assert error["code"] == "unavailable" and error["retry_after"] >= 1, error
    assert await late.wait_closed(timeout=10.0) == 1013


async def _outage(server: Reachable, stop: Callable[[], object],
                  back: Callable[[], object]) -> None:
    tokens = {name: await register(server, name) for name in ("alice", "bob", "carol", "dave")}
    alice, bob = await connect(server, tokens["alice"]), await connect(server, tokens["bob"])
    carol, dave = await connect(server, tokens["carol"]), await connect(server, tokens["dave"])
    table, _ = await seat_two(server, alice, bob)
    other, _ = await seat_two(server, carol, dave)  # dave's socket closes during the hold
    await _a_few_moves(alice, bob, table)

    stop()
    for client, at in ((alice, table), (bob, table), (carol, other)):
        held = await client.expect("held", timeout=10.0, table=at)
        assert held["retry_after"] >= 1, held
    await dave.close()
    await _refused_while_held(server, carol, tokens["alice"])
    back()

    resumed = await alice.expect("resumed", timeout=20.0, table=table)
    await bob.expect("resumed", timeout=20.0, table=table)
    assert resumed["until"] > resumed["since"], resumed
    # The seat of a socket closed during the hold is marked gone once Redis is back.
    gone = await carol.expect("player_disconnected", timeout=20.0, table=other)
    assert gone["player"] == "dave", gone
    over = await play_out({0: alice, 1: bob}, table)
    assert over["reason"] == "normal", over
    for client in (alice, bob):
        assert client.of_type("timeout") == [], client.of_type("timeout")


async def test_a_paused_redis_holds_the_tables_and_the_game_goes_on(
    private_redis: PrivateRedis, start_server: StartServer
) -> None:
    server = await start_server(dice_factory=scripted(5), redis_url=private_redis.url,
                                **OPTIONS)
    await _outage(server, private_redis.pause, private_redis.cont)


async def test_a_server_process_holds_through_a_paused_redis(
    private_redis: PrivateRedis, key_prefix: str
) -> None:
    """The same as ``python -m server`` in its own process (random dice)."""
    node = ServerProcess("--redis-url", private_redis.url, "--key-prefix", key_prefix,
                         "--scrypt-n", "2", "--trusted-proxies", "127.0.0.1",
                         *(f"--{key.replace('_', '-')}={value}" for key, value in OPTIONS.items()))
    try:
        await node.start()
        await _outage(node, private_redis.pause, private_redis.cont)
    finally:
        node.stop()

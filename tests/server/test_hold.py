"""A table holds while Redis is away: a private redis-server of the test (never the shared one)
is paused (SIGSTOP) or killed and started again from its append-only file during a live game,
for longer than the decision clock. Nobody gets a strike or an automatic move, the players are
told (``held``, then ``resumed``), requests and ``hello`` are refused with ``unavailable`` and
``retry_after``, a socket closed meanwhile counts as gone once Redis is back, and the game is
played to its end.

The clocks are short (the hold is what must be longer than the decision clock), and every
wait but the hold itself waits for a message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from hardening_helpers import PrivateRedis, ServerProcess
from server_helpers import (
    Client,
    Reachable,
    StartServer,
    connect,
    latest_state,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.client import ClientError

DECISION = 4.0
HOLD = 2.5 * DECISION  # the outage: longer than a decision's clock
OPTIONS: dict[str, Any] = {"decision_time": DECISION, "max_strikes": 3, "grace_period": 3.0,
                           "hold_allowance": 2.0, "redis_check_interval": 0.2}


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
    await asyncio.sleep(HOLD)  # the hold outlasts the clock of the player to act
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


async def test_redis_paused_longer_than_the_clock_costs_nobody_a_strike(
    private_redis: PrivateRedis, start_server: StartServer
) -> None:
    server = await start_server(dice_factory=scripted(5), redis_url=private_redis.url,
                                **OPTIONS)
    await _outage(server, private_redis.pause, private_redis.cont)


async def test_redis_killed_and_restarted_from_its_file_costs_nobody_a_strike(
    private_redis: PrivateRedis, start_server: StartServer
) -> None:
    server = await start_server(dice_factory=scripted(6), redis_url=private_redis.url,
                                **OPTIONS)
    await _outage(server, private_redis.kill, private_redis.start)


async def test_a_clock_running_out_before_the_outage_is_noticed_costs_nothing(
    private_redis: PrivateRedis, start_server: StartServer
) -> None:
    """The health check is rare here (every 5 s), the clock short (1.5 s, one strike
    forfeits): the clock runs out after Redis stopped answering and before a check noticed.
    The server reads the store before charging the player, finds it away and holds the
    table instead."""
    server = await start_server(dice_factory=scripted(7), redis_url=private_redis.url,
                                decision_time=1.5, max_strikes=1, grace_period=3.0,
                                hold_allowance=3.0, redis_check_interval=5.0)
    alice = await connect(server, await register(server, "alice"))
    bob = await connect(server, await register(server, "bob"))
    table, _ = await seat_two(server, alice, bob)
    private_redis.pause()
    await alice.expect("held", timeout=30.0, table=table)
    private_redis.cont()
    await alice.expect("resumed", timeout=30.0, table=table)
    state = latest_state(alice, table)
    assert state is not None and state["clock"]["strikes"] == [0, 0], state
    side = state["game"]["to_act"]
    players = {0: alice, 1: bob}
    await players[side].send({"type": "resign", "table": table, "kind": "single"})
    await players[1 - side].expect("resign_offered", timeout=20.0, table=table)
    await players[1 - side].send({"type": "accept_resign", "table": table})
    over = await alice.expect("game_over", timeout=20.0, table=table)
    assert over["reason"] == "resign", over
    assert alice.of_type("timeout") == [] and bob.of_type("timeout") == []


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

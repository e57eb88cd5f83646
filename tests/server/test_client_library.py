"""The client library (server.client) against a real server on loopback: a whole game in JSON
and in msgpack, requests answered or refused by ref, and a reconnect in the middle of a game
that catches up with ``sync``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from server_helpers import StartServer, scripted

from server.client import (
    Client,
    ClientError,
    ConnectionLost,
    Format,
    RequestFailed,
    TableEvent,
    Welcome,
    default_decision,
    register,
)

ADDRESSES = iter(f"10.77.{n // 250}.{n % 250 + 1}" for n in range(10_000))


async def two_clients(url: str, fmt: Format, **options: Any) -> tuple[Client, Client]:
    alice = await Client.connect(url, guest=True, fmt=fmt,
                                 headers={"X-Forwarded-For": next(ADDRESSES)}, **options)
    bob = await Client.connect(url, guest=True, fmt=fmt,
                               headers={"X-Forwarded-For": next(ADDRESSES)}, **options)
    return alice, bob


async def act_until(clients: list[Client], table: str, *, stop: str = "game_over",
                    max_events: int = 4000) -> dict[str, Any]:
    """Both clients answer every decision awaited from them (default decisions) until
    ``stop``; returns the ``stop`` event as the first client saw it."""
    acted: dict[int, int] = {}
    final: dict[str, Any] | None = None

    async def drive(client: Client, index: int) -> None:
        nonlocal final
        current = client.state(table)
        if current is not None and client.my_turn(table):  # a decision awaited already
            acted[index] = client.tables[table].v
            await client.send({**default_decision(current["game"]), "table": table})
        for _ in range(max_events):
            event = await client.next_event(10.0)
            if not isinstance(event, TableEvent) or event.table != table:
                continue
            if event.type == stop:
                if index == 0:
                    final = event.raw
                return
            state = event.raw.get("state") if event.type != "sync" else client.state(table)
            if not isinstance(state, dict) or state.get("status") != "playing":
                continue
            game = state["game"]
            if game["to_act"] == client.side(table) and acted.get(index, -1) < event.v:
                acted[index] = event.v
                await client.send({**default_decision(game), "table": table})
        raise AssertionError(f"no {stop}")

    await asyncio.gather(*(drive(c, i) for i, c in enumerate(clients)))
    assert final is not None
    return final


@pytest.mark.parametrize("fmt", [Format.JSON, Format.MSGPACK])
async def test_a_whole_game_through_the_library(start_server: StartServer, fmt: Format) -> None:
    server = await start_server(dice_factory=scripted(11))
    alice, bob = await two_clients(server.ws_url, fmt)
    assert isinstance(alice.welcome, Welcome) and alice.welcome.is_guest
    assert alice.welcome.raw["format"] == str(fmt)
    table = await alice.create_table("private")
    ack = await bob.join(table)
    assert ack["type"] == "ack"
    start = await alice.wait_for("game_start", table=table)
    assert isinstance(start, TableEvent) and start.state is not None
    assert start.state.rating is not None and start.state.rating["unrated_reason"] == \
        "private_room"
    over = await act_until([alice, bob], table)
    assert over["type"] == "game_over" and over["reason"] == "normal"
    assert alice.tables[table].v == bob.tables[table].v == over["v"]
    await alice.close()
    await bob.close()


async def test_requests_are_answered_by_ref_or_refused(start_server: StartServer) -> None:
    server = await start_server()
    token = await register(server.ws_url, "libuser", "correct horse")
    client = await Client.connect(server.ws_url, token, fmt="msgpack")
    assert client.player == "libuser"
    pong = await client.request({"type": "ping"})
    assert pong["type"] == "pong"
    with pytest.raises(RequestFailed) as info:
        await client.join("no-such-table")
    assert info.value.code == "no_such_table"
    with pytest.raises(RequestFailed) as bad:
        await client.request({"type": "play_computer", "level": "grandmaster"})
    assert bad.value.code == "bad_field" and bad.value.error.field == "level"
    with pytest.raises(ClientError, match="HTTP 401"):
        await Client.connect(server.ws_url, "not-a-token")
    await client.close()
    with pytest.raises(ConnectionLost):  # after the events received before the close
        for _ in range(20):
            await client.next_event(1.0)


async def test_a_reconnect_in_the_middle_of_a_game_syncs_what_was_missed(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(5))
    alice, bob = await two_clients(server.ws_url, Format.JSON)
    table = await alice.create_table("private")
    await bob.join(table)
    await alice.wait_for("game_start", table=table)
    await bob.wait_for("game_start", table=table)
    # A few decisions, then Alice's socket drops while Bob keeps playing.
    seen: list[int] = []
    for _ in range(6):
        for client in (alice, bob):
            if client.my_turn(table):
                game = client.state(table)["game"]  # type: ignore[index]
                await client.request({**default_decision(game), "table": table})
        await asyncio.sleep(0.05)
    before = alice.tables[table].v
    assert alice.ws is not None
    await alice.ws.close()  # not Client.close(): the library reconnects by itself
    if bob.my_turn(table):  # while Alice is away
        game = bob.state(table)["game"]  # type: ignore[index]
        await bob.request({**default_decision(game), "table": table})
    for _ in range(200):
        if alice.reconnects and alice.welcome is not None and not alice.is_closed:
            break
        await asyncio.sleep(0.02)
    assert alice.reconnects == 1
    # Catch up: every event after ``before`` arrives, in order, without gaps or repeats.
    await bob.sync(table)
    for _ in range(200):
        if alice.tables[table].v >= bob.tables[table].v:
            break
        await asyncio.sleep(0.02)
    while True:
        try:
            event = await alice.next_event(0.2)
        except TimeoutError:
            break
        if isinstance(event, TableEvent) and event.table == table and \
                event.type not in ("sync", "resume", "watching"):
            seen.append(event.v)
    assert seen == list(range(seen[0], seen[-1] + 1)), seen  # in order, no gap, no repeat
    assert seen[-1] == alice.tables[table].v == bob.tables[table].v
    assert before in seen or seen[0] <= before + 1
    # And the game goes on to its end.
    over = await act_until([alice, bob], table)
    assert over["type"] == "game_over"
    await alice.close()
    await bob.close()

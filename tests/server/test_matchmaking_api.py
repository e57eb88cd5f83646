"""The lobby functions matchmaking builds on: start a rated game between two given players,
and push a message to a player wherever they are connected."""

from __future__ import annotations

import asyncio

import pytest
from server_helpers import StartServer, connect, play_out, register, scripted

from server.protocol import ProtocolError
from server.tables.ratings import RatingPlan


async def test_start_rated_game_and_push_across_nodes(start_server: StartServer) -> None:
    one = await start_server(dice_factory=scripted(7), node_id="mm-one")
    two = await start_server(dice_factory=scripted(7), node_id="mm-two")
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"), binary=True)

    assert await one.lobby.push_to_player("bob", {"type": "match_found", "opponent": "alice"})
    found = await b.expect("match_found")
    assert found["opponent"] == "alice"
    assert not await one.lobby.push_to_player("nobody", {"type": "match_found"})

    table = await one.lobby.start_rated_game("alice", "bob", match_length=None)
    start_a = await a.expect("game_start", table=table)
    start_b = await b.expect("game_start", table=table)
    assert start_a["rating"]["ladder"] == "table42" and start_a["v"] == start_b["v"]
    assert start_a["players"] == ["alice", "bob"]

    with pytest.raises(ProtocolError) as info:
        await two.lobby.start_rated_game("bob", "carol")
    assert (info.value.code, info.value.field) == ("already_seated", "first")
    # same_player, bad fields: tests/tables/test_machine_rules.py (check_new_table)

    over = await play_out({0: a, 1: b}, table)
    assert over["rating"]["ladder"] == "table42"
    assert abs((await b.expect("rating"))["change"]) == 16


async def test_start_rated_match_to_n(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(9))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table = await server.lobby.start_rated_game("bob", "alice", match_length=1)
    start = await a.expect("game_start", table=table)
    assert start["players"] == ["bob", "alice"] and start["rating"]["ladder"] == "fibs"
    await b.expect("game_start", table=table)
    over = await play_out({0: b, 1: a}, table, until="match_over")
    event = await a.expect("rating")
    assert (event["ladder"], event["match_length"]) == ("fibs", 1)
    assert event["won"] is (over["winner"] == "alice")


@pytest.mark.parametrize("across_nodes", [False, True], ids=["same-node", "other-node"])
async def test_sync_right_after_match_found_finds_the_table(
    start_server: StartServer, across_nodes: bool
) -> None:
    """A client that syncs the moment ``match_found`` arrives gets the table, never
    ``no_such_table``, even while the announcement to the other player is still under way
    (the table is known, here and in Redis, before anyone hears of it)."""
    one = await start_server(dice_factory=scripted(5), node_id="race-one")
    home = await start_server(dice_factory=scripted(5), node_id="race-two") if across_nodes \
        else one
    a = await connect(home, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    replies: list[dict[str, object]] = []

    async def slow_announce(table: str, _plan: RatingPlan) -> None:
        await one.lobby.push_to_player("alice", {"type": "match_found", "table": table})
        found = await a.expect("match_found")
        await a.send({"type": "sync", "table": found["table"], "since": 0, "id": 99})
        # The other player's announcement takes a while (a round trip, a slow socket ...).
        await asyncio.sleep(0.3)
        replies.extend(m for m in a.messages if m.get("ref") == 99)

    table = await one.lobby.start_rated_game("alice", "bob", announce=slow_announce)
    assert not any(r.get("type") == "error" for r in replies), replies
    await b.expect("game_start", table=table)
    synced = await a.expect("sync", table=table)
    assert synced["ref"] == 99 and synced["state"] is not None
    assert synced["summary"]["players"] == ["alice", "bob"]
    assert synced["summary"]["status"] == "playing"
    assert a.of_type("game_start")


@pytest.mark.parametrize("across_nodes", [False, True], ids=["same-node", "other-node"])
async def test_a_socket_opened_while_the_table_starts_keeps_the_seat(
    start_server: StartServer, across_nodes: bool
) -> None:
    """A player who opens a socket (here or on another node) between ``match_found`` and the
    seating keeps the seat and gets the game on that socket too: the new socket is attached
    once the table is seated, the seat is not taken for one whose table is gone."""
    one = await start_server(dice_factory=scripted(5), node_id="att-one")
    other = await start_server(dice_factory=scripted(5), node_id="att-two") if across_nodes \
        else one
    token = await register(one, "alice")
    a = await connect(one, token)
    b = await connect(one, await register(one, "bob"))
    late: list[object] = []

    async def slow_announce(table: str, _plan: RatingPlan) -> None:
        await one.lobby.push_to_player("alice", {"type": "match_found", "table": table})
        late.append(await connect(other, token))  # its on_connect runs meanwhile
        await asyncio.sleep(0.3)

    table = await one.lobby.start_rated_game("alice", "bob", announce=slow_announce)
    await a.expect("game_start", table=table)
    await b.expect("game_start", table=table)
    assert await one.lobby.persistence.seat_of("alice") == table
    second = late[0]
    assert isinstance(second, type(a))
    synced = await second.request({"type": "sync", "table": table, "since": 0})
    assert synced["type"] == "sync" and synced["summary"]["players"] == ["alice", "bob"]
    # The game's events reach the socket opened meanwhile (its node is attached to the seat).
    start = next(m for m in a.messages if m.get("type") == "game_start")
    mover = a if start["state"]["game"]["to_act"] == 0 else b
    resign = await mover.request({"type": "resign", "table": table})
    assert resign.get("type") != "error", resign
    await second.expect("resign_offered", table=table)


async def test_a_failed_announcement_frees_both_seats(start_server: StartServer) -> None:
    """When announcing a new table fails (Redis down for a tournament's bookkeeping ...), the
    table never starts and neither player stays seated at it."""
    server = await start_server(dice_factory=scripted(5))
    a = await connect(server, await register(server, "alice"))
    await connect(server, await register(server, "bob"))
    tables: list[str] = []

    async def failing(table: str, _plan: RatingPlan) -> None:
        tables.append(table)
        raise RuntimeError("announcement failed")

    with pytest.raises(RuntimeError):
        await server.lobby.start_rated_game("alice", "bob", announce=failing)
    assert await server.lobby.persistence.seat_of("alice") is None
    assert await server.lobby.persistence.seat_of("bob") is None
    gone = await a.request({"type": "sync", "table": tables[0], "since": 0})
    assert (gone["type"], gone["code"]) == ("error", "no_such_table")
    table = await server.lobby.start_rated_game("alice", "bob")
    await a.expect("game_start", table=table)

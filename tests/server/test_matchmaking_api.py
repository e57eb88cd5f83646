"""The lobby functions matchmaking builds on: start a rated game between two given players,
and push a message to a player wherever they are connected."""

from __future__ import annotations

import pytest
from server_helpers import StartServer, connect, play_out, register, scripted

from server.protocol import ProtocolError


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
    with pytest.raises(ProtocolError) as info:
        await one.lobby.start_rated_game("carol", "carol")
    assert info.value.code == "same_player"

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

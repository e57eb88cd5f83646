"""Lobby: create, list, join, watch, leave; which games are rated and why not."""

from __future__ import annotations

import asyncio
from typing import Any

from server_helpers import (
    StartServer,
    connect,
    eventually,
    guest,
    play_out,
    register,
    scripted,
    seat_two,
)


async def test_list_join_watch_and_unlisted_private_rooms(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(3))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    c = await connect(server, await register(server, "carol"))
    w = await connect(server, await guest(server), binary=True)
    public = await a.request({"type": "create_table", "mode": "boosted", "match_length": 0})
    private = await c.request({"type": "create_table", "mode": "private"})
    listed = await w.request({"type": "list_tables"})
    ids = [t["table"] for t in listed["tables"]]
    assert public["table"] in ids and private["table"] not in ids
    entry = next(t for t in listed["tables"] if t["table"] == public["table"])
    assert (entry["mode"], entry["status"]) == ("boosted", "open")
    assert entry["players"] == ["alice", None]
    only_competitive = await w.request({"type": "list_tables", "mode": "competitive"})
    assert public["table"] not in [t["table"] for t in only_competitive["tables"]]

    watching = await w.request({"type": "watch", "table": public["table"]})
    assert watching["type"] == "watching" and watching["summary"]["status"] == "open"
    await b.send({"type": "join", "table": public["table"]})
    start = await w.expect("game_start", table=public["table"])
    assert start["players"] == ["alice", "bob"]

    async def listed_playing() -> bool:
        listed = await w.request({"type": "list_tables"})
        entry = next(t for t in listed["tables"] if t["table"] == public["table"])
        return bool(entry["status"] == "playing")

    await eventually(listed_playing)  # the node updates the lobby index in the background
    await b.request({"type": "leave", "table": public["table"]})  # forfeits the boosted game
    over = await w.expect("game_over", table=public["table"])
    assert (over["reason"], over["winner"]) == ("leave", "alice")
    await w.request({"type": "unwatch", "table": public["table"]})


async def test_leaving_an_open_table_closes_it(start_server: StartServer) -> None:
    server = await start_server()
    a = await connect(server, await register(server, "alice"))
    created = await a.request({"type": "create_table", "mode": "competitive"})
    table = created["table"]
    await a.send({"type": "leave", "table": table})
    closed = await a.expect("table_closed", table=table)
    assert closed["reason"] == "left"
    again = await a.request({"type": "create_table", "mode": "competitive"})
    assert again["type"] == "table_created"  # the seat was given back


async def test_an_open_table_whose_creator_vanishes_is_closed(
    start_server: StartServer,
) -> None:
    server = await start_server(grace_period=0.2)
    a = await connect(server, await register(server, "alice"))
    w = await connect(server, await guest(server))
    created = await a.request({"type": "create_table", "mode": "competitive"})
    table = created["table"]
    await w.request({"type": "watch", "table": table})
    await a.close()
    countdown = await w.expect("player_disconnected", table=table)
    assert countdown["player"] == "alice"
    closed = await w.expect("table_closed", table=table)
    assert closed["reason"] == "abandoned"
    for _ in range(50):  # the lobby index is updated in the background
        listed = await w.request({"type": "list_tables"})
        if table not in [t["table"] for t in listed["tables"]]:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the closed table is still listed")


async def expect_unrated(server: Any, a: Any, b: Any, reason: str, **table: Any) -> None:
    name, start = await seat_two(server, a, b, **table)
    assert start["rating"] == {"rated": False, "ladder": None, "boosted": False,
                               "unrated_reason": reason}
    await play_out({0: a, 1: b}, name)
    await a.request({"type": "ping"})
    assert a.of_type("rating") == [] and b.of_type("rating") == []


async def test_unrated_games_say_why(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(5))
    alice = await connect(server, await register(server, "alice"))
    bob = await connect(server, await register(server, "bob"))
    await expect_unrated(server, alice, bob, "private_room", mode="private")
    # (tournament_game: tests/server/test_tournaments_runner.py, players cannot open one;
    # same_address and guest_player: tests/server/test_table_outcomes.py, below the socket)

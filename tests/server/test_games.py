"""Whole games over real sockets: scripted dice, both wire formats, ratings pushed at the end,
cube, resignation, drops, clocks, disconnects."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Awaitable
from typing import Any, cast

import msgpack
import redis.asyncio as aioredis
from server_helpers import (
    StartServer,
    connect,
    latest_state,
    play_out,
    register,
    scripted,
    seat_two,
)

from rating_plugin.store import RatingStore
from server.protocol.lean import apply_event
from server.rules import Play, Position, Side, Step, format_play


async def two_players(start_server: StartServer, **settings: Any) -> tuple[Any, Any, Any]:
    server = await start_server(dice_factory=scripted(7), **settings)
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"), binary=True)
    return server, a, b


async def test_whole_competitive_game_json_and_msgpack_clients(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    server, a, b = await two_players(start_server)
    table, start = await seat_two(server, a, b)
    assert start["rating"] == {"rated": True, "ladder": "table42", "boosted": False,
                               "unrated_reason": None}
    assert start["state"]["clock"]["deadline"] > time.time()
    over_a = await play_out({0: a, 1: b}, table)
    over_b = await b.expect("game_over", table=table)
    assert over_a["v"] == over_b["v"]
    assert over_a["state"]["game"] == over_b["state"]["game"]
    assert over_a["state"]["game"]["phase"] == "over"
    assert (over_a["reason"], over_a["cube"]) == ("normal", 1)
    winner = over_a["winner"]
    ratings = {c.player: await c.expect("rating") for c in (a, b)}
    for player, event in ratings.items():
        won = player == winner
        assert event["game_id"] == over_a["game_id"]
        assert event["ladder"] == "table42"
        assert (event["old"], event["change"], event["new"]) == (
            (1500, 16, 1516) if won else (1500, -16, 1484)
        )
        assert (event["k"], event["expected_score"], event["cube_coefficient"]) == (32, 0.5, 1.0)
        assert event["won"] is won
    # The event log in Redis holds every event, in order, ending with game_over.
    store = RatingStore(redis_client, key_prefix)
    assert (await store.rating(winner, "table42")).rating == 1516
    events = await cast(
        "Awaitable[list[bytes]]", redis_client.lrange(f"{key_prefix}{{t:{table}}}:events", 0, -1)
    )
    assert [msgpack.unpackb(e)["v"] for e in events] == list(range(1, over_a["v"] + 1))
    # The log holds the lean form (PROTOCOL.md §5.1): the full form's state is the previous
    # state with the changes applied.
    last = msgpack.unpackb(events[-1])
    assert {k: v for k, v in last.items() if k not in ("changes", "state")} == {
        k: v for k, v in over_b.items() if k not in ("changes", "state")}
    before = next(m["state"] for m in reversed(b.messages)
                  if m.get("table") == table and m.get("v", 0) < over_b["v"] and "state" in m)
    assert apply_event(before, last) == over_b["state"]
    # Versions are gapless: the creator saw every event, the joiner all from its seat on.
    for client, first in ((a, 1), (b, 2)):
        versions = [m["v"] for m in client.messages if m.get("table") == table and "v" in m]
        assert versions == list(range(first, over_a["v"] + 1))


def resign_at_cube_four(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
    game = state["game"]
    if game["phase"] == "roll" and game["can_double"] and game["cube"] < 4:
        return {"type": "double"}
    if game["phase"] == "roll" and game["cube"] == 4:
        return {"type": "resign", "kind": "single"}
    if game["phase"] == "resign_offered":
        return {"type": "accept_resign"}
    return None


async def test_resignation_at_cube_four_scores_coefficient_1_33(
    start_server: StartServer,
) -> None:
    server, a, b = await two_players(start_server)
    table, _ = await seat_two(server, a, b)
    over = await play_out({0: a, 1: b}, table, decide=resign_at_cube_four)
    assert (over["reason"], over["cube"], over["kind"]) == ("resign", 4, "single")
    assert over["points"] == 4
    for client in (a, b):
        event = await client.expect("rating")
        assert event["cube"] == 4
        assert round(event["cube_coefficient"], 2) == 1.33
        assert abs(event["change"]) == 21
        assert event["won"] is (client.player == over["winner"])


async def test_dropped_double_loses_at_the_cube_before_it(start_server: StartServer) -> None:
    server, a, b = await two_players(start_server)
    table, _ = await seat_two(server, a, b)

    def double_then_drop(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
        game = state["game"]
        if game["phase"] == "roll" and game["can_double"]:
            return {"type": "double"}
        if game["phase"] == "double_offered":
            return {"type": "drop"}
        return None

    over = await play_out({0: a, 1: b}, table, decide=double_then_drop)
    assert (over["reason"], over["cube"], over["points"]) == ("drop", 1, 1)
    doubled = next(m for m in a.messages if m.get("type") == "doubled")
    assert doubled["cube"] == 2
    assert over["winner_side"] == doubled["side"]
    for client in (a, b):
        event = await client.expect("rating")
        assert (event["cube"], event["cube_coefficient"], abs(event["change"])) == (1, 1.0, 16)


async def test_three_timeouts_forfeit_the_game(start_server: StartServer) -> None:
    server, a, b = await two_players(start_server, decision_time=0.3)
    table, start = await seat_two(server, a, b)
    idle = start["state"]["game"]["to_act"]  # the opening roll's winner never acts

    def only_the_other(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
        return {} if side == idle else None

    over = await play_out({0: a, 1: b}, table, decide=only_the_other)
    assert over["reason"] == "timeout"
    assert over["winner_side"] == 1 - idle
    timeouts = [m for m in a.messages if m.get("type") == "timeout"]
    assert [t["strikes"] for t in timeouts] == [1, 2, 3]
    assert all(t["side"] == idle for t in timeouts)
    assert timeouts[-1]["action"] == "forfeit"
    assert timeouts[0]["action"] == "play"  # the opening roll's first legal play
    for client in (a, b):
        event = await client.expect("rating")
        assert abs(event["change"]) == 16 and event["reason"] == "timeout"


async def test_disconnect_past_grace_forfeits_and_rating_waits_in_the_inbox(
    start_server: StartServer,
) -> None:
    server, a, b = await two_players(start_server, grace_period=0.3)
    table, _ = await seat_two(server, a, b)
    await a.close()
    countdown = await b.expect("player_disconnected", table=table)
    assert countdown["player"] == "alice"
    assert 0 < countdown["deadline"] - time.time() <= 0.3
    over = await b.expect("game_over", table=table)
    assert (over["reason"], over["winner"], over["loser"]) == ("disconnect", "bob", "alice")
    bob_event = await b.expect("rating")
    assert bob_event["change"] == 16
    # Alice comes back later: the rating event is delivered on connect, then the inbox is empty.
    login = await _login(server, "alice")
    back = await connect(server, login)
    alice_event = await back.expect("rating")
    assert (alice_event["game_id"], alice_event["change"]) == (over["game_id"], -16)
    await back.close()
    again = await connect(server, login)
    await again.request({"type": "ping"})
    assert again.of_type("rating") == []


async def _login(server: Any, name: str) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.post(
        f"{server.http}/api/login", json={"name": name, "password": "correct horse"}
    ) as resp:
        assert resp.status == 200
        return str((await resp.json())["token"])


async def test_reconnect_within_grace_resumes_where_it_was(start_server: StartServer) -> None:
    server, a, b = await two_players(start_server, grace_period=5.0)
    table, _ = await seat_two(server, a, b)
    seen_v = max(m["v"] for m in a.messages if m.get("table") == table and "v" in m)
    await a.close()
    await b.expect("player_disconnected", table=table)
    back = await connect(server, await _login(server, "alice"))
    resume = await back.expect("resume", table=table)
    assert resume["side"] == 0
    reconnected = await b.expect("player_reconnected", table=table)
    assert resume["v"] == reconnected["v"]
    before = latest_state(b, table)
    assert before is not None
    assert resume["state"]["game"] == before["game"]
    synced = await back.request({"type": "sync", "table": table, "since": seen_v})
    assert synced["complete"] is True
    assert [e["type"] for e in synced["events"]] == ["player_disconnected", "player_reconnected"]
    assert synced["events"][0]["v"] == seen_v + 1
    # Play goes on from the same position.
    back.messages.append(resume)
    back._read = len(back.messages) - 1
    over = await play_out({0: back, 1: b}, table)
    assert over["reason"] == "normal"


def as_sent(message: dict[str, Any]) -> dict[str, Any]:
    """An event as the server sent it: a change-only one without the state the client
    library attached to it (PROTOCOL.md §5.1)."""
    if "changes" not in message:
        return message
    return {k: v for k, v in message.items() if k != "state"}


async def test_sync_reads_older_events_from_the_redis_log(start_server: StartServer) -> None:
    server, a, b = await two_players(start_server, recent_events=8)
    table, _ = await seat_two(server, a, b)
    over = await play_out({0: a, 1: b}, table)
    synced = await b.request({"type": "sync", "table": table, "since": 0})
    assert synced["complete"] is True and synced["v"] == over["v"]
    assert [e["v"] for e in synced["events"]] == list(range(1, over["v"] + 1))
    answers = {"sync", "ack", "watching", "resume"}
    received = {m["v"]: m for m in b.messages
                if m.get("table") == table and "v" in m and m["type"] not in answers}
    assert all(as_sent(received[e["v"]]) == e for e in synced["events"] if e["v"] in received)
    recent = await b.request({"type": "sync", "table": table, "since": over["v"] - 3})
    assert [e["v"] for e in recent["events"]] == [over["v"] - 2, over["v"] - 1, over["v"]]


async def test_heavy_week_player_gets_k16_while_opponent_gets_k32(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    store = RatingStore(redis_client, key_prefix)
    now = time.time()
    for i in range(50):
        await store.settle(f"seed-{i}", ladder="table42", winner="alice", loser=f"dummy{i}",
                           finished_at=now - 3600 - i * 60)
    server, a, b = await two_players(start_server)
    table, _ = await seat_two(server, a, b)
    await play_out({0: a, 1: b}, table)
    ka = await a.expect("rating")
    kb = await b.expect("rating")
    assert (ka["k"], ka["recent_games"]) == (16, 50)
    assert (kb["k"], kb["recent_games"]) == (32, 0)


async def test_boosted_game_earns_points_not_elo(start_server: StartServer) -> None:
    server, a, b = await two_players(start_server)
    table, start = await seat_two(server, a, b, mode="boosted")
    assert start["rating"] == {"rated": False, "ladder": None, "boosted": True,
                               "unrated_reason": "boosted_mode"}
    over = await play_out({0: a, 1: b}, table)
    for client in (a, b):
        event = await client.expect("boosted")
        assert event["points"] == over["points"]
        assert event["won"] is (client.player == over["winner"])
    assert a.of_type("rating") == [] and b.of_type("rating") == []


async def test_a_settlement_redis_refuses_at_the_end_is_made_once_it_is_back(
    start_server: StartServer, key_prefix: str
) -> None:
    """Redis away when the game ends: the game still ends, the node keeps settling in the
    background and the rating events arrive once a Redis answers (nothing is lost)."""
    from server.app import LOBBY
    from server.embedded_redis import EmbeddedRedis

    server, a, b = await two_players(start_server)
    lobby = server.app[LOBBY]
    late = EmbeddedRedis()  # its port: nothing listens there yet
    away = aioredis.Redis(host="127.0.0.1", port=late.port, socket_connect_timeout=0.2)
    table, _ = await seat_two(server, a, b)  # counted against the pair limit while Redis is up
    # The node's rating store (shared by its tables) settles through the Redis that is away.
    lobby.ratings.settle = RatingStore(away, prefix=key_prefix).settle
    try:
        over = await play_out({0: a, 1: b}, table, decide=resign_at_cube_four)
        assert over["reason"] == "resign"
        await asyncio.sleep(0.3)
        assert not [m for m in a.messages if m.get("type") == "rating"]
        late.start()
        for client in (a, b):
            event = await client.expect("rating", timeout=10)
            assert (event["cube"], abs(event["change"])) == (4, 21)
        settled = await RatingStore(away, prefix=key_prefix).settlement(over["game_id"])
        assert settled is not None
    finally:
        await away.aclose()
        late.stop()


async def test_plays_are_offered_as_steps_and_accepted_as_steps_or_text(
    start_server: StartServer,
) -> None:
    server, a, b = await two_players(start_server)
    table, _ = await seat_two(server, a, b)
    sent: list[tuple[int, Position, Play]] = []

    def alternate(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
        game = state["game"]
        if game["phase"] != "move":
            return None
        offered = game["legal_plays"]
        assert all(
            1 <= len(steps) <= 4
            and all(len(step) == 2 and 0 <= step[1] < step[0] <= 25 for step in steps)
            for steps in offered
        )
        choice = offered[len(sent) % len(offered)]
        position = Position(tuple(game["board"]), tuple(game["bar"]), tuple(game["off"]),
                            Side(side))
        sent.append((side, position, tuple(Step(s, t) for s, t in choice)))
        # Every other play goes back as text (hits not marked), the rest as offered.
        play: Any = choice if len(sent) % 2 else " ".join(
            f"{s}/{t}".replace("25/", "bar/").replace("/0", "/off") for s, t in choice
        )
        return {"type": "play", "play": play}

    seen: list[dict[str, Any]] = []

    def six_plays(message: dict[str, Any]) -> bool:
        if message.get("type") == "moved" and message not in seen:
            seen.append(message)
        return len(seen) >= 6

    await play_out({0: a, 1: b}, table, decide=alternate, stop=six_plays)
    moved = [m for m in a.messages if m.get("type") == "moved" and m.get("table") == table]
    assert len(moved) >= 4
    # Each `moved` names the play in normal form, hits marked, however it was sent.
    for event, (side, position, steps) in zip(moved, sent, strict=False):
        assert event["side"] == side
        assert event["play"] == format_play(steps, position)


async def test_a_forgotten_table_is_freed_at_once_not_by_the_garbage_collector(
    start_server: StartServer,
) -> None:
    # Reference cycles would keep each finished game (its history, its events) in memory
    # until the collector's next full pass, which a busy server makes rarely.
    gc.collect()
    gc.disable()
    try:
        server, a, b = await two_players(start_server, finished_linger=0.05)
        table_id, _ = await seat_two(server, a, b)
        table = weakref.ref(server.lobby.tables[table_id])
        await play_out({0: a, 1: b}, table_id)
        for client in (a, b):
            await client.expect("rating")
        for _ in range(500):
            if table_id not in server.lobby.tables:
                break
            await asyncio.sleep(0.01)
        assert table_id not in server.lobby.tables
        for _ in range(500):  # the background tasks of the game's end let go of it
            if table() is None:
                break
            await asyncio.sleep(0.01)
        assert table() is None, [type(r).__name__ for r in gc.get_referrers(table())]
    finally:
        gc.enable()

"""Game outcomes and ratings below the socket (``table_bench.py``): a real table, its
finisher and the rating store over the real Redis, a fake outbox and the virtual clock. The
socket tests keep one case of each protocol feature (tests/server/test_games.py,
test_lobby.py)."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from table_bench import TableBench

from server.protocol.messages import TableMode


async def test_a_rated_match_to_three_settles_fibs_once(redis_client: aioredis.Redis,
                                                        key_prefix: str) -> None:
    bench = await TableBench.open(redis_client, key_prefix)
    table = await bench.table("m3", mode=TableMode.COMPETITIVE, match_length=3)
    [start] = bench.sent("alice", "game_start")
    assert start["rating"]["ladder"] == "fibs"
    over = await bench.play_out(table, until="match_over")
    assert max(over["score"]) >= 3
    games = bench.sent("alice", "game_over")
    assert len(games) >= 2 or games[0]["points"] >= 3
    [event_a] = bench.sent("alice", "rating")
    [event_b] = bench.sent("bob", "rating")
    assert event_a["ladder"] == "fibs" and event_a["match_length"] == 3
    assert event_a["game_id"] == event_b["game_id"] == "m3-m"
    assert event_a["change"] == -event_b["change"]  # both new players: equal multipliers


async def _unrated(bench: TableBench, table_id: str, reason: str, **seating: Any) -> None:
    table = await bench.table(table_id, ("p-" + table_id, "q-" + table_id),
                              TableMode.COMPETITIVE, **seating)
    [start] = bench.sent("p-" + table_id, "game_start")
    assert start["rating"] == {"rated": False, "ladder": None, "boosted": False,
                               "unrated_reason": reason}
    await bench.play_out(table)
    assert bench.sent("p-" + table_id, "rating") == bench.sent("q-" + table_id, "rating") == []


async def test_unrated_competitive_games_say_why(redis_client: aioredis.Redis,
                                                 key_prefix: str) -> None:
    # (private_room: tests/server/test_lobby.py over sockets; tournament_game:
    # tests/server/test_tournaments_runner.py)
    bench = await TableBench.open(redis_client, key_prefix)
    await _unrated(bench, "same", "same_address", addresses=("198.51.100.5", "198.51.100.5"))
    await _unrated(bench, "guest", "guest_player", guests=(False, True))

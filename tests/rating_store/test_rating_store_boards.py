"""Leaderboards (ranks, ties, paging, FIBS "new" rule), ratings and history."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Awaitable
from typing import cast

import redis.asyncio as aioredis

from rating_plugin.store import Ladder, RatingStore

T = 1_700_000_000.0


async def test_table42_leaderboard_ranks_ties_and_pages(store: RatingStore) -> None:
    # a beats b, c beats d: a and c 1516, b and d 1484; e beats f after that: 1516 too.
    await store.settle("g1", ladder="table42", winner="a", loser="b", finished_at=T)
    await store.settle("g2", ladder="table42", winner="c", loser="d", finished_at=T + 1)
    await store.settle("g3", ladder="table42", winner="e", loser="f", finished_at=T + 2)
    await store.award_podium("cup", ["g"], prizes=(20,), awarded_at=T + 3)
    board = await store.leaderboard(Ladder.TABLE42)
    assert [(e.rank, e.rating) for e in board] == [
        (1, 1520), (2, 1516), (2, 1516), (2, 1516), (5, 1484), (5, 1484), (5, 1484)
    ]
    assert [e.player for e in board][:1] == ["g"]
    page = await store.leaderboard("table42", offset=2, limit=3)
    assert [(e.rank, e.player) for e in page] == [(e.rank, e.player) for e in board[2:5]]
    page = await store.leaderboard("table42", offset=5, limit=3)
    assert [(e.rank, e.rating) for e in page] == [(5, 1484), (5, 1484)]
    assert await store.leaderboard("table42", offset=7) == []
    assert await store.rank("g", "table42") == 1
    assert await store.rank("e", "table42") == 2
    assert await store.rank("f", "table42") == 5
    assert await store.rank("nobody", "table42") is None
    assert await store.leaderboard("fibs") == []


async def test_fibs_players_under_10_experience_are_new_and_off_the_board(
    store: RatingStore,
) -> None:
    first = await store.settle("m1", ladder="fibs", winner="a", loser="b", match_length=7,
                               finished_at=T)
    assert (first.winner.multiplier, first.winner.experience_before) == (5.0, 0)
    a = await store.rating("a", "fibs")
    assert (a.experience, a.is_new, a.shown, a.games, a.wins) == (7, True, "new", 1, 1)
    assert await store.leaderboard("fibs") == []
    assert await store.rank("a", "fibs") is None

    await store.settle("m2", ladder="fibs", winner="b", loser="c", match_length=3,
                       finished_at=T + 1)
    b = await store.rating("b", "fibs")
    assert (b.experience, b.is_new, b.games, b.wins, b.losses) == (10, False, 2, 1, 1)
    assert b.shown == f"{b.rating:.2f}"
    board = await store.leaderboard("fibs")
    assert [(e.rank, e.player, e.rating) for e in board] == [(1, "b", b.rating)]
    assert await store.rank("b", "fibs") == 1
    assert await store.rank("c", "fibs") is None

    never = await store.rating("z", "fibs")
    assert (never.rating, never.experience, never.is_new, never.games) == (1500.0, 0, True, 0)
    t42 = await store.rating("z", "table42")
    assert (t42.rating, t42.experience, t42.is_new, t42.shown) == (1500, None, False, "1500")


async def test_history_is_newest_first_and_bounded(
    redis_client: aioredis.Redis, key_prefix: str
) -> None:
    store = RatingStore(redis_client, prefix=key_prefix, history_limit=5)
    for i in range(7):
        winner, loser = ("a", f"o{i}") if i % 2 == 0 else (f"o{i}", "a")
        await store.settle(f"g{i}", ladder="table42", winner=winner, loser=loser,
                           finished_at=T + i, reason="resign" if i == 6 else "normal")
    history = await store.history("a", "table42", limit=5)
    assert [entry.ref for entry in history] == ["g6", "g5", "g4", "g3", "g2"]
    assert [entry.seq for entry in history] == [7, 6, 5, 4, 3]
    top = history[0]
    assert (top.won, top.opponent, top.reason, top.at, top.ladder) == (
        True, "o6", "resign", T + 6, Ladder.TABLE42
    )
    assert history[1].won is False and history[1].change < 0
    for newer, older in itertools.pairwise(history):
        assert newer.rating_before == older.rating_after
        assert newer.rating_after == newer.rating_before + newer.change
    assert (await store.history("a", "table42", limit=2)) == history[:2]
    stored = redis_client.llen(store.keys.history("table42", "a"))
    assert await cast("Awaitable[int]", stored) == 5
    assert await store.history("a", "fibs") == []


async def test_fibs_history_keeps_decimals(store: RatingStore) -> None:
    result = await store.settle("m", ladder="fibs", winner="a", loser="b", match_length=1,
                                finished_at=T, reason="drop")
    [entry] = await store.history("b", "fibs")
    assert (entry.rating_before, entry.rating_after, entry.change, entry.won) == (
        1500.0, result.loser.rating_after, result.loser.change, False
    )
    assert entry.reason == "drop" and result.reason == "drop"
    assert result.winner.change == 10.0  # 2 points at stake x the new-player multiplier 5


async def test_a_decoding_client_works_too(redis_url: str, key_prefix: str) -> None:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        store = RatingStore(client, prefix=key_prefix)
        result = await store.settle("g", ladder="table42", winner="a", loser="b",
                                    finished_at=T)
        assert result.winner.change == 16
        assert [e.player for e in await store.leaderboard("table42")] == ["a", "b"]
        assert await store.rank("b", "table42") == 2
        assert (await store.history("a", "table42"))[0].ref == "g"
        assert (await store.rating("a", "table42")).rating == 1516
    finally:
        await client.aclose()


async def test_any_printable_ids_round_trip(store: RatingStore) -> None:
    await store.load_scripts()
    winner, loser, game = 'Zoë "the cube" \\o/', "игрок 2: ♔", "game\t".strip() + ' "1"'
    result = await store.settle(game, ladder="table42", winner=winner, loser=loser,
                                finished_at=T)
    assert (result.game_id, result.winner.player, result.loser.player) == (game, winner, loser)
    assert await store.settlement(game) == dataclasses.replace(result, applied=False)
    [entry] = await store.history(loser, "table42")
    assert (entry.ref, entry.opponent) == (game, winner)
    assert [e.player for e in await store.leaderboard("table42")] == [winner, loser]

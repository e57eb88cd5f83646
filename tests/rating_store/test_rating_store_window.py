"""The 7-day window that picks each player's K: edges, out-of-order settlements, trimming."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from rating_plugin.store import RatingStore

T = 1_700_000_000.0
WEEK = 7 * 24 * 3600.0


async def play_week(store: RatingStore, player: str, count: int, *, start: float) -> None:
    """``player`` wins ``count`` games against fresh opponents, one per minute from ``start``."""
    for i in range(count):
        await store.settle(
            f"{player}-g{i}", ladder="table42", winner=player, loser=f"{player}-opp{i}",
            finished_at=start + 60 * i,
        )


@pytest.mark.parametrize(("before", "expected_k"), [(49, 32), (50, 16), (51, 16)])
async def test_k_drops_to_16_from_50_games_in_the_window(
    store: RatingStore, before: int, expected_k: int
) -> None:
    await play_week(store, "p", before, start=T - 3 * 24 * 3600)
    assert await store.recent_games("p", T) == before
    result = await store.settle("final", ladder="table42", winner="p", loser="q", finished_at=T)
    assert result.winner.recent_games == before
    assert result.winner.k == expected_k
    assert result.loser.recent_games == 0
    assert result.loser.k == 32


@pytest.mark.parametrize(
    ("edge_offset", "counted", "expected_k"), [(0.0, 50, 16), (-0.001, 49, 32)]
)
async def test_a_game_exactly_7_days_before_counts_and_1_ms_older_does_not(
    store: RatingStore, edge_offset: float, counted: int, expected_k: int
) -> None:
    await play_week(store, "p", 49, start=T - 24 * 3600)
    await store.settle(
        "edge", ladder="table42", winner="p", loser="x", finished_at=T - WEEK + edge_offset
    )
    assert await store.recent_games("p", T) == counted
    result = await store.settle("final", ladder="table42", winner="q", loser="p", finished_at=T)
    assert (result.loser.recent_games, result.loser.k) == (counted, expected_k)


async def test_the_game_itself_and_games_at_the_same_instant_are_not_counted(
    store: RatingStore,
) -> None:
    await play_week(store, "p", 49, start=T - 24 * 3600)
    same_instant = await store.settle("a", ladder="table42", winner="p", loser="x", finished_at=T)
    assert same_instant.winner.recent_games == 49
    result = await store.settle("b", ladder="table42", winner="p", loser="y", finished_at=T)
    # "a" finished at T too: [T - 7 days, T) leaves it out, so K stays 32.
    assert (result.winner.recent_games, result.winner.k) == (49, 32)
    assert await store.recent_games("p", T) == 49
    assert await store.recent_games("p", T + 0.001) == 51


async def seed_window(redis: aioredis.Redis, store: RatingStore, player: str, count: int) -> None:
    """Put ``count`` Competitive games of ``player`` in the hours before ``T`` (rating kept)."""
    await redis.zadd(
        store.keys.window(player),
        {f"seed-{player}-{i}": int((T - 3600) * 1000) + i for i in range(count)},
    )


async def test_mixed_k_example_of_the_spec_end_to_end(
    store: RatingStore, redis_client: aioredis.Redis
) -> None:
    # Equal ratings, you have K=16 (60 games this week), the opponent K=32.
    await seed_window(redis_client, store, "you", 60)
    await seed_window(redis_client, store, "you2", 60)
    you_win = await store.settle("g1", ladder="table42", winner="you", loser="opp", finished_at=T)
    assert (you_win.winner.k, you_win.loser.k) == (16, 32)
    assert (you_win.winner.change, you_win.loser.change) == (8, -16)
    assert (you_win.winner.rating_after, you_win.loser.rating_after) == (1508, 1484)

    opp_wins = await store.settle("g2", ladder="table42", winner="opp2", loser="you2",
                                  finished_at=T)
    assert (opp_wins.winner.k, opp_wins.loser.k) == (32, 16)
    assert (opp_wins.winner.change, opp_wins.loser.change) == (16, -8)
    assert (await store.rating("you", "table42")).rating == 1508
    assert (await store.rating("you2", "table42")).rating == 1492
    assert (await store.rating("opp2", "table42")).rating == 1516


async def test_an_out_of_order_settlement_counts_its_own_window(store: RatingStore) -> None:
    day = 24 * 3600.0
    await store.settle("old", ladder="table42", winner="p", loser="x", finished_at=T - 5 * day)
    await store.settle("new", ladder="table42", winner="p", loser="y", finished_at=T + 3 * day)
    # Settled last, finished in between: only "old" is in [T - 7 days, T).
    late = await store.settle("late", ladder="table42", winner="p", loser="z", finished_at=T)
    assert late.winner.recent_games == 1
    assert await store.recent_games("p", T + 3 * day) == 1  # "late" only; "old" is out
    assert await store.recent_games("p", T + 3 * day + 1) == 2  # "late" and "new"


async def window_scores(redis: aioredis.Redis, store: RatingStore, player: str) -> list[float]:
    return [score for _, score in await redis.zrange(store.keys.window(player), 0, -1,
                                                     withscores=True)]


async def test_windows_are_trimmed_relative_to_the_newest_game(
    redis_client: aioredis.Redis, key_prefix: str
) -> None:
    store = RatingStore(redis_client, prefix=key_prefix, late_grace=0)
    day = 24 * 3600.0
    for i in range(10):
        await store.settle(f"g{i}", ladder="table42", winner="p", loser=f"o{i}",
                           finished_at=T + i * day)
    scores = await window_scores(redis_client, store, "p")
    newest = (T + 9 * day) * 1000
    assert max(scores) == newest
    assert min(scores) == newest - WEEK * 1000  # the game exactly 7 days back stays
    assert len(scores) == 8
    # Far too late for any future window: recorded (for exactly-once) but trimmed at once.
    stale = await store.settle("stale", ladder="table42", winner="p", loser="q",
                               finished_at=T - 30 * day)
    assert stale.applied and stale.winner.recent_games == 0
    assert len(await window_scores(redis_client, store, "p")) == 8


async def test_late_grace_keeps_late_settlements_exact(
    redis_client: aioredis.Redis, key_prefix: str
) -> None:
    day = 24 * 3600.0
    strict = RatingStore(redis_client, prefix=key_prefix + "strict:", late_grace=0)
    graced = RatingStore(redis_client, prefix=key_prefix + "grace:", late_grace=day)
    for store in (strict, graced):
        await store.settle("a", ladder="table42", winner="p", loser="x", finished_at=T)
        await store.settle("b", ladder="table42", winner="p", loser="y",
                           finished_at=T + 7.5 * day)
        # Finished 12 hours before "b", settled after it: its window reaches back to T.
        late = await store.settle("c", ladder="table42", winner="p", loser="z",
                                  finished_at=T + 7 * day)
        assert late.winner.recent_games == (0 if store is strict else 1)

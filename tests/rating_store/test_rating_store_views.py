"""The one-round-trip reads: a leaderboard page with its size and a player's place, and a
profile. Each must agree with the store's single-purpose reads, on a plain Redis and on a
cluster, and survive Redis forgetting its scripts."""

from __future__ import annotations

import redis.asyncio as aioredis

from rating_plugin.store import Ladder, LeaderboardPlace, RatingStore

T = 1_700_000_000.0
DAY = 24 * 3600.0


async def seed(store: RatingStore) -> None:
    """Table42 with ties (1520, 1516 x3, 1484 x3), a FIBS board with a "new" player, Boosted."""
    await store.settle("g1", ladder="table42", winner="a", loser="b", finished_at=T)
    await store.settle("g2", ladder="table42", winner="c", loser="d", finished_at=T + 1)
    await store.settle("g3", ladder="table42", winner="e", loser="f", finished_at=T + 2)
    await store.award_podium("cup", ["g"], prizes=(20,), awarded_at=T + 3)
    await store.settle("m1", ladder="fibs", winner="a", loser="b", match_length=11,
                       finished_at=T + 4)
    await store.settle("m2", ladder="fibs", winner="c", loser="a", match_length=3,
                       finished_at=T + 5)
    await store.add_boosted_points("x1", winner="c", loser="a", points=8, finished_at=T + 6)
    await store.add_boosted_points("x2", winner="d", loser="a", points=8, finished_at=T + 7)


async def test_pages_agree_with_the_leaderboard_and_rank(store: RatingStore) -> None:
    await seed(store)
    for ladder in Ladder:
        board = await store.leaderboard(ladder, limit=100)
        for offset in range(len(board) + 1):
            for limit in (1, 2, 3, 100):
                page = await store.leaderboard_page(ladder, offset=offset, limit=limit,
                                                    player="a")
                assert page.entries == tuple(board[offset:offset + limit]), (ladder, offset)
                assert (page.total, page.offset, page.limit) == (len(board), offset, limit)
                assert page.place is not None
                assert page.place.rank == await store.rank("a", ladder)
        assert (await store.leaderboard_page(ladder)).place is None


async def test_a_named_players_place(store: RatingStore) -> None:
    await seed(store)
    page = await store.leaderboard_page("table42", limit=1, player="f")
    assert page.place == LeaderboardPlace("f", 5, 1484, False)
    # c has FIBS experience 3: off the board, "new", with the stored rating.
    page = await store.leaderboard_page("fibs", player="c")
    c = await store.rating("c", "fibs")
    assert page.place == LeaderboardPlace("c", None, c.rating, True)
    assert (await store.leaderboard_page("fibs", player="zed")).place == LeaderboardPlace(
        "zed", None, 1500.0, True)
    assert (await store.leaderboard_page("boosted", player="a")).place == LeaderboardPlace(
        "a", None, 0, False)
    assert (await store.leaderboard_page("boosted", player="d")).place == LeaderboardPlace(
        "d", 1, 8, False)


async def test_profile_agrees_with_the_single_reads(store: RatingStore) -> None:
    await seed(store)
    for player in ("a", "b", "c", "d", "g", "nobody"):
        profile = await store.profile(player, at=T + DAY)
        assert profile.table42 == await store.rating(player, "table42")
        assert profile.fibs == await store.rating(player, "fibs")
        assert profile.table42_rank == await store.rank(player, "table42")
        assert profile.fibs_rank == await store.rank(player, "fibs")
        assert profile.boosted_rank == await store.rank(player, "boosted")
        assert profile.boosted_points == await store.boosted_points(player)
        assert profile.recent_games == await store.recent_games(player, T + DAY)
        assert profile.k == 32
        assert profile.is_known is (player != "nobody")
    # Eight days on, the games have left the 7-day window.
    assert (await store.profile("a", at=T + 8 * DAY)).recent_games == 0


async def test_views_on_a_cluster_and_after_the_scripts_are_forgotten(
    redis_cluster: aioredis.RedisCluster, key_prefix: str
) -> None:
    store = RatingStore(redis_cluster, prefix=key_prefix)
    await seed(store)
    # The cluster is this session's own embedded server: flushing its scripts harms nobody.
    await redis_cluster.script_flush()
    profile = await store.profile("a", at=T + DAY)
    assert (profile.table42.rating, profile.table42_rank, profile.boosted_rank) == (1516, 2, None)
    assert profile.recent_games == 1 and profile.fibs.experience == 14
    await redis_cluster.script_flush()
    page = await store.leaderboard_page("table42", limit=2, player="b")
    assert [e.player for e in page.entries][:1] == ["g"] and page.total == 7
    assert page.place is not None and page.place.rank == 5

"""The pair limit's count in the rating store (real Redis, and a Redis Cluster): at most
``limit`` rated games per pair within the window, idempotent by game id, either order of the
players, one script in the ``{rated}`` slot."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from rating_plugin.errors import InvalidInputError, SamePlayerError
from rating_plugin.keys import RATED_TAG
from rating_plugin.store import PairReservation, RatingStore

DAY = 86400.0
T = 1.8e9


async def reserve(store: RatingStore, game: str, a: str, b: str, at: float = T,
                  limit: int = 3) -> PairReservation:
    return await store.reserve_pair_game(game, a, b, at=at, limit=limit, window=DAY)


async def check_the_rule(store: RatingStore) -> None:
    answers = [await reserve(store, f"g{n}", *(("ann", "bob") if n % 2 else ("bob", "ann")),
                             at=T + n) for n in range(5)]
    assert [(r.rated, r.games) for r in answers] == [
        (True, 1), (True, 2), (True, 3), (False, 3), (False, 3)]
    # The same game again: the first answer, nothing counted twice.
    assert (await reserve(store, "g1", "ann", "bob", at=T + 100)).rated is True
    assert await store.pair_games("bob", "ann", at=T + 100, window=DAY) == 3
    # Another pair is its own count.
    assert (await reserve(store, "g9", "ann", "cid")).rated is True
    # A day after the first game it leaves the window: one more game may be rated.
    later = T + DAY + 0.5
    assert await store.pair_games("ann", "bob", at=later, window=DAY) == 2
    assert (await reserve(store, "g10", "ann", "bob", at=later)) == PairReservation(True, 3, 3)


async def test_at_most_limit_rated_games_per_pair_in_the_window(
    redis_client: aioredis.Redis, key_prefix: str
) -> None:
    store = RatingStore(redis_client, key_prefix)
    await check_the_rule(store)
    assert store.keys.pair("bob", "ann") == store.keys.pair("ann", "bob")
    assert store.keys.pair("ann", "bob").startswith(f"{key_prefix}{RATED_TAG}:pair:")
    # Ids with the separator cannot collide: the first id's length is in the key.
    assert store.keys.pair("a:b", "c") != store.keys.pair("a", "b:c")


async def test_the_same_on_a_redis_cluster(
    redis_cluster: aioredis.RedisCluster, key_prefix: str
) -> None:
    await check_the_rule(RatingStore(redis_cluster, key_prefix))


async def test_bad_arguments_are_refused(redis_client: aioredis.Redis, key_prefix: str) -> None:
    store = RatingStore(redis_client, key_prefix)
    with pytest.raises(SamePlayerError):
        await reserve(store, "g1", "ann", "ann")
    with pytest.raises(InvalidInputError, match=r"^limit: "):
        await reserve(store, "g1", "ann", "bob", limit=0)
    with pytest.raises(InvalidInputError, match=r"^window: "):
        await store.reserve_pair_game("g1", "ann", "bob", at=T, limit=3, window=0)
    with pytest.raises(InvalidInputError, match=r"^b: "):
        await reserve(store, "g1", "ann", "b{x}")

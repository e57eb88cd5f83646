"""The scripts' arithmetic is bit-for-bit that of the pure formulas.

Each example seeds two players' stored state (ratings, window counts, experience) with the
store's own key names, settles one game and compares every number with
``rating_plugin.table42.change`` / ``rating_plugin.fibs.change``. The tests are synchronous
(hypothesis drives them) and run their coroutines on a private event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Awaitable, Iterator
from importlib import resources
from typing import cast

import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rating_plugin import fibs, round_half_away, table42
from rating_plugin.store import RatingStore

T = 1_700_000_000.0
# The harness is shared by all examples on purpose: each example uses fresh ids.
EXAMPLES = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_ids = itertools.count()


class Harness:
    """A store and its client on a private event loop, cleaned up afterwards."""

    def __init__(self, redis_url: str, prefix: str) -> None:
        self.runner = asyncio.Runner()
        self.prefix = prefix
        self.redis = self.runner.run(self._connect(redis_url))
        self.store = RatingStore(self.redis, prefix=prefix)

    @staticmethod
    async def _connect(url: str) -> aioredis.Redis:
        client: aioredis.Redis = aioredis.Redis.from_url(url)
        return client

    async def _cleanup(self) -> None:
        keys = [key async for key in self.redis.scan_iter(match=f"{self.prefix}*", count=1000)]
        for i in range(0, len(keys), 500):
            await self.redis.unlink(*keys[i : i + 500])
        await self.redis.aclose()

    def close(self) -> None:
        self.runner.run(self._cleanup())
        self.runner.close()


@pytest.fixture
def harness(redis_url: str, key_prefix: str) -> Iterator[Harness]:
    h = Harness(redis_url, key_prefix)
    try:
        yield h
    finally:
        h.close()


async def seed_table42(h: Harness, player: str, rating: int, recent: int) -> None:
    await cast("Awaitable[int]",
               h.redis.hset(h.store.keys.rating("table42", player), "rating", str(rating)))
    if recent:
        start = int((T - 6 * 24 * 3600) * 1000)
        await h.redis.zadd(h.store.keys.window(player),
                           {f"seed-{i}": start + i for i in range(recent)})


async def settle_table42(
    h: Harness, winner: int, loser: int, cube: int, winner_recent: int, loser_recent: int
) -> None:
    n = next(_ids)
    w, lo = f"w{n}", f"l{n}"
    await seed_table42(h, w, winner, winner_recent)
    await seed_table42(h, lo, loser, loser_recent)
    got = await h.store.settle(f"g{n}", ladder="table42", winner=w, loser=lo, cube=cube,
                               finished_at=T)
    want = table42.change(
        winner, loser, cube=cube,
        winner_k=table42.k_factor(winner_recent), loser_k=table42.k_factor(loser_recent),
    )
    assert (got.winner.k, got.loser.k) == (want.winner_k, want.loser_k)
    assert (got.winner.change, got.loser.change) == (want.winner, want.loser)
    assert got.winner.expected_score == want.winner_expected
    assert got.loser.expected_score == want.loser_expected
    assert got.winner.cube_coefficient == want.coefficient == table42.cube_coefficient(cube)
    assert (got.winner.rating_after, got.loser.rating_after) == (
        winner + want.winner, loser + want.loser
    )
    assert (got.winner.recent_games, got.loser.recent_games) == (winner_recent, loser_recent)
    assert (await h.store.rating(w, "table42")).rating == winner + want.winner


ratings = st.integers(min_value=-500, max_value=4500)
recent_counts = st.sampled_from([0, 1, 48, 49, 50, 51, 80])


@EXAMPLES
@given(ratings, ratings, st.sampled_from(table42.CUBE_VALUES), recent_counts, recent_counts)
def test_table42_settlements_match_the_pure_formula(
    harness: Harness, winner: int, loser: int, cube: int, winner_recent: int, loser_recent: int
) -> None:
    harness.runner.run(settle_table42(harness, winner, loser, cube, winner_recent, loser_recent))


async def seed_fibs(h: Harness, player: str, rating: float, experience: int) -> None:
    await cast("Awaitable[int]", h.redis.hset(
        h.store.keys.rating("fibs", player),
        mapping={"rating": repr(rating), "experience": experience},
    ))


async def settle_fibs(
    h: Harness, winner: float, loser: float, length: int, winner_exp: int, loser_exp: int
) -> None:
    n = next(_ids)
    w, lo = f"w{n}", f"l{n}"
    await seed_fibs(h, w, winner, winner_exp)
    await seed_fibs(h, lo, loser, loser_exp)
    got = await h.store.settle(f"m{n}", ladder="fibs", winner=w, loser=lo, match_length=length,
                               finished_at=T)
    want = fibs.change(winner, loser, match_length=length, winner_experience=winner_exp,
                       loser_experience=loser_exp)
    assert (got.winner.change, got.loser.change) == (want.winner, want.loser)
    assert (got.winner.multiplier, got.loser.multiplier) == (
        want.winner_multiplier, want.loser_multiplier
    )
    assert got.winner.expected_score == want.winner_probability
    assert got.loser.expected_score == 1 - want.winner_probability
    assert (got.winner.rating_after, got.loser.rating_after) == (
        winner + want.winner, loser + want.loser
    )
    assert (got.winner.experience_before, got.loser.experience_before) == (winner_exp, loser_exp)
    stored = await h.store.rating(w, "fibs")
    assert (stored.rating, stored.experience) == (winner + want.winner, winner_exp + length)


real_ratings = st.floats(min_value=-500, max_value=4500, allow_nan=False)
experiences = st.integers(min_value=0, max_value=600)


@EXAMPLES
@given(real_ratings, real_ratings, st.integers(min_value=1, max_value=25), experiences,
       experiences)
def test_fibs_settlements_match_the_pure_formula(
    harness: Harness, winner: float, loser: float, length: int, winner_exp: int, loser_exp: int
) -> None:
    harness.runner.run(settle_fibs(harness, winner, loser, length, winner_exp, loser_exp))


def lua_round_half_away() -> str:
    """The rounding function exactly as settle_table42.lua defines it."""
    source = resources.files("rating_plugin").joinpath("lua", "settle_table42.lua").read_text()
    found = re.search(r"^local function round_half_away\(x\)\n.*?^end\n", source, re.M | re.S)
    assert found is not None
    return found.group(0)


HALVES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.49999999999999994,
          4503599627370495.5, -4503599627370495.5, 2.5000000000000004, 7.0, -7.0, 0.0, -0.0,
          15.999999999999998, 16.5, -16.5, 1e15 + 0.5]


async def test_the_scripts_round_half_away_from_zero_exactly(
    redis_client: aioredis.Redis,
) -> None:
    script = lua_round_half_away() + (
        "local out = {}\n"
        "for i, v in ipairs(ARGV) do out[i] = string.format('%.17g', round_half_away(tonumber(v)))"
        " end\nreturn out\n"
    )
    got = await cast("Awaitable[list[bytes]]",
                     redis_client.eval(script, 0, *[repr(x) for x in HALVES]))
    assert [int(value) for value in got] == [round_half_away(x) for x in HALVES]
    assert b"-0" not in got

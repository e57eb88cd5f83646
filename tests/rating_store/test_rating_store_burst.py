"""A burst of concurrent settlements equals replaying the stored ones in applied order.

Hundreds of Table42 games, FIBS matches and a few podium awards over a few dozen players run
at once (finish times spread over 9 days, a fifth of them settled out of order). Afterwards
the stored records are replayed by ``seq`` through the pure formulas and a model of the
7-day windows; every K, change and final rating must match, and no window may hold an entry
older than 7 days before its newest game.
"""

from __future__ import annotations

import asyncio
import bisect
import random
from collections import defaultdict
from collections.abc import Awaitable
from typing import cast

import redis.asyncio as aioredis

from rating_plugin import fibs, round_half_away, table42
from rating_plugin.store import PodiumAward, RatingStore, Settlement

T = 1_700_000_000.0
DAY = 24 * 3600.0
WINDOW_MS = table42.WINDOW_SECONDS * 1000
PLAYERS = [f"p{i:02d}" for i in range(30)]
# The first four play in most games, so their windows pass 50 games and K drops to 16.
WEIGHTS = [8 if i < 4 else 1 for i in range(len(PLAYERS))]


def pairings(rng: random.Random, count: int) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        a, b = rng.choices(PLAYERS, WEIGHTS, k=2)
        if a != b:
            pairs.append((a, b))
    return pairs


class WindowModel:
    """The store's window rule: count [T - 7 days, T), record, trim before newest - 7 days."""

    def __init__(self) -> None:
        self.scores: dict[str, list[int]] = defaultdict(list)

    def count(self, player: str, finish_ms: int) -> int:
        scores = self.scores[player]
        return bisect.bisect_left(scores, finish_ms) - bisect.bisect_left(
            scores, finish_ms - WINDOW_MS
        )

    def record(self, player: str, finish_ms: int) -> None:
        scores = self.scores[player]
        bisect.insort(scores, finish_ms)
        cutoff = scores[-1] - WINDOW_MS
        del scores[: bisect.bisect_left(scores, cutoff)]


async def test_a_burst_equals_replaying_the_stored_settlements(
    redis_client: aioredis.Redis, key_prefix: str
) -> None:
    store = RatingStore(redis_client, prefix=key_prefix, late_grace=0)
    rng = random.Random(42)
    games: list[Awaitable[Settlement | PodiumAward]] = []
    for i, (winner, loser) in enumerate(pairings(rng, 600)):
        at = T + 9 * DAY * i / 600
        if rng.random() < 0.2:
            at -= rng.uniform(0, 2 * DAY)  # reported late
        games.append(store.settle(
            f"t{i}", ladder="table42", winner=winner, loser=loser,
            cube=rng.choice(table42.CUBE_VALUES), finished_at=int(at * 1000) / 1000,
        ))
    for i, (winner, loser) in enumerate(pairings(rng, 150)):
        games.append(store.settle(
            f"f{i}", ladder="fibs", winner=winner, loser=loser,
            match_length=rng.choice([1, 3, 5, 7, 11]), finished_at=T + i,
        ))
    for i in range(4):
        games.append(store.award_podium(f"cup{i}", rng.sample(PLAYERS, 3), awarded_at=T + i))
    order = list(range(len(games)))
    rng.shuffle(order)
    done = await asyncio.gather(*(games[i] for i in order))
    assert all(result.applied for result in done)

    # Replay what is stored (not what the calls returned), in each ladder's applied order.
    stored = await asyncio.gather(*(store.settlement(f"t{i}") for i in range(600)),
                                  *(store.settlement(f"f{i}") for i in range(150)))
    settlements: list[Settlement] = [s for s in stored if s is not None]
    assert len(settlements) == 750
    podiums = [r for r in done if isinstance(r, PodiumAward)]
    t42_events: list[Settlement | PodiumAward] = [
        s for s in settlements if s.ladder == "table42"
    ]
    t42_events += podiums
    t42_events.sort(key=lambda event: event.seq)
    assert [event.seq for event in t42_events] == list(range(1, 605))

    ratings: dict[str, int] = defaultdict(lambda: table42.START_RATING)
    windows = WindowModel()
    heavy = 0
    for event in t42_events:
        if isinstance(event, PodiumAward):
            for place in event.places:
                assert place.rating_before == ratings[place.player]
                ratings[place.player] += place.prize
            continue
        w, lo = event.winner, event.loser
        finish_ms = round_half_away(event.finished_at * 1000)
        counts = (windows.count(w.player, finish_ms), windows.count(lo.player, finish_ms))
        assert (w.recent_games, lo.recent_games) == counts
        want = table42.change(
            ratings[w.player], ratings[lo.player], cube=event.cube,
            winner_k=table42.k_factor(counts[0]), loser_k=table42.k_factor(counts[1]),
        )
        assert (w.rating_before, lo.rating_before) == (ratings[w.player], ratings[lo.player])
        assert (w.k, lo.k, w.change, lo.change) == (
            want.winner_k, want.loser_k, want.winner, want.loser
        )
        heavy += (w.k == 16) + (lo.k == 16)
        ratings[w.player] += want.winner
        ratings[lo.player] += want.loser
        windows.record(w.player, finish_ms)
        windows.record(lo.player, finish_ms)
    assert heavy > 40  # the heavy-week rule was exercised

    fibs_events = sorted((s for s in settlements if s.ladder == "fibs"), key=lambda s: s.seq)
    assert [s.seq for s in fibs_events] == list(range(1, 151))
    fibs_ratings: dict[str, float] = defaultdict(lambda: fibs.START_RATING)
    experience: dict[str, int] = defaultdict(int)
    for s in fibs_events:
        winner, loser = s.winner.player, s.loser.player
        assert s.match_length is not None
        expected = fibs.change(
            fibs_ratings[winner], fibs_ratings[loser], match_length=s.match_length,
            winner_experience=experience[winner], loser_experience=experience[loser],
        )
        assert (s.winner.change, s.loser.change) == (expected.winner, expected.loser)
        fibs_ratings[winner] += expected.winner
        fibs_ratings[loser] += expected.loser
        experience[winner] += s.match_length
        experience[loser] += s.match_length

    for player in PLAYERS:
        t42 = await store.rating(player, "table42")
        assert t42.rating == ratings[player]
        f = await store.rating(player, "fibs")
        assert (f.rating, f.experience) == (fibs_ratings[player], experience[player])
        window = redis_client.zrange(store.keys.window(player), 0, -1, withscores=True)
        scores = [score for _, score in await cast("Awaitable[list[tuple[bytes, float]]]", window)]
        assert scores == windows.scores[player]
        assert not scores or min(scores) >= max(scores) - WINDOW_MS
    board = await store.leaderboard("table42", limit=100)
    assert {entry.player: entry.rating for entry in board} == {
        player: rating for player, rating in ratings.items()
    }

"""Exactly once: settlements, podium awards and Boosted points apply once per id."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from rating_plugin.errors import AlreadySettledConflict
from rating_plugin.store import RatingStore

T = 1_700_000_000.0


async def test_a_game_settled_twice_applies_once(store: RatingStore) -> None:
    first = await store.settle("g", ladder="table42", winner="a", loser="b", cube=4,
                               finished_at=T, reason="gammon")
    again = await store.settle("g", ladder="table42", winner="a", loser="b", cube=4,
                               finished_at=T + 5, reason="normal")
    assert first.applied and not again.applied
    assert again == dataclasses.replace(first, applied=False)
    assert (again.finished_at, again.reason) == (T, "gammon")  # the stored result
    assert (await store.rating("a", "table42")).games == 1
    assert (await store.rating("a", "table42")).rating == 1500 + first.winner.change
    assert await store.recent_games("a", T + 1) == 1
    assert len(await store.history("a", "table42")) == 1
    assert await store.settlement("g") == again
    assert await store.settlement("never") is None


async def test_a_game_settled_concurrently_applies_once(store: RatingStore) -> None:
    results = await asyncio.gather(*(
        store.settle("g", ladder="fibs", winner="a", loser="b", match_length=5, finished_at=T)
        for _ in range(12)
    ))
    assert sum(result.applied for result in results) == 1
    assert len({(r.winner, r.loser, r.seq) for r in results}) == 1
    rating = await store.rating("a", "fibs")
    assert (rating.games, rating.experience) == (1, 5)
    assert rating.rating == results[0].winner.rating_after


@pytest.mark.parametrize(
    ("changes", "differences"),
    [
        ({"winner": "b", "loser": "a"}, ("winner", "loser")),
        ({"loser": "c"}, ("loser",)),
        ({"cube": 2}, ("cube",)),
        ({"ladder": "fibs", "match_length": 3}, ("ladder", "match_length")),
    ],
)
async def test_a_reused_game_id_with_other_terms_is_a_conflict(
    store: RatingStore, changes: dict[str, object], differences: tuple[str, ...]
) -> None:
    terms: dict[str, object] = {"ladder": "table42", "winner": "a", "loser": "b", "cube": 1,
                                "finished_at": T}
    first = await store.settle("g", **terms)  # type: ignore[arg-type]
    with pytest.raises(AlreadySettledConflict) as caught:
        await store.settle("g", **{**terms, **changes})  # type: ignore[arg-type]
    assert caught.value.differences == differences
    assert caught.value.field == "game_id" and caught.value.code == "already_settled_conflict"
    assert caught.value.stored == await store.settlement("g")
    assert "game_id: 'g' was already settled" in str(caught.value)
    assert (await store.rating("a", "table42")).rating == first.winner.rating_after
    assert (await store.rating("c", "table42")).games == 0


async def test_podium_awards_once(store: RatingStore) -> None:
    await store.settle("g", ladder="table42", winner="a", loser="b", finished_at=T)
    awards = await asyncio.gather(*(
        store.award_podium("cup", ["a", "b", "c"], awarded_at=T + 60) for _ in range(5)
    ))
    assert sum(award.applied for award in awards) == 1
    award = awards[0]
    assert award.changes == {"a": 50, "b": 25, "c": 15}
    assert [(p.place, p.rating_before, p.rating_after) for p in award.places] == [
        (1, 1516, 1566), (2, 1484, 1509), (3, 1500, 1515)
    ]
    again = await store.award_podium("cup", ["a", "b", "c"])
    assert not again.applied and again.awarded_at == T + 60 and again.places == award.places
    with pytest.raises(AlreadySettledConflict) as caught:
        await store.award_podium("cup", ["c", "b", "a"])
    assert caught.value.differences == ("players",)
    with pytest.raises(AlreadySettledConflict):
        await store.award_podium("cup", ["a", "b", "c"], prizes=(100, 50, 25))

    a = await store.rating("a", "table42")
    assert (a.rating, a.games, a.wins) == (1566, 1, 1)  # an award is not a game
    top = (await store.history("a", "table42"))[0]
    assert (top.reason, top.ref, top.place, top.change, top.opponent, top.won) == (
        "podium", "cup", 1, 50, None, None
    )
    assert top.seq == award.seq == 2  # after the game, in the Table42 applied order
    assert await store.rank("a", "table42") == 1
    two = await store.award_podium("small-cup", ["d", "e"], prizes=(10, 5, 1))
    assert two.changes == {"d": 10, "e": 5}


async def test_boosted_points_add_once_and_never_touch_elo(store: RatingStore) -> None:
    results = await asyncio.gather(*(
        store.add_boosted_points("b1", winner="a", loser="b", points=6, finished_at=T)
        for _ in range(5)
    ))
    assert sum(result.applied for result in results) == 1
    assert {result.winner_total for result in results} == {6}
    second = await store.add_boosted_points("b2", winner="a", loser="c", points=3,
                                            finished_at=T)
    assert second.winner_total == 9
    assert await store.boosted_points("a") == 9
    assert await store.boosted_points("b") == 0
    board = await store.leaderboard("boosted")
    assert [(e.rank, e.player, e.rating) for e in board] == [(1, "a", 9)]
    with pytest.raises(AlreadySettledConflict) as caught:
        await store.add_boosted_points("b1", winner="a", loser="b", points=9, finished_at=T)
    assert caught.value.differences == ("points",)
    # Boosted ids are their own namespace, and Elo is untouched.
    rated = await store.settle("b1", ladder="table42", winner="a", loser="b", finished_at=T)
    assert rated.applied and rated.winner.rating_before == 1500
    assert (await store.rating("c", "table42")).games == 0

"""Bad input gets a clear error naming the field, before anything reaches Redis."""

from __future__ import annotations

import math
from typing import Any

import pytest
import redis.asyncio as aioredis

from rating_plugin.errors import (
    InvalidInputError,
    RatingError,
    SamePlayerError,
    UnknownLadderError,
)
from rating_plugin.store import RatingStore

T = 1_700_000_000.0
GOOD: dict[str, Any] = {"ladder": "table42", "winner": "a", "loser": "b", "finished_at": T}


@pytest.mark.parametrize(
    ("changes", "error", "field", "text"),
    [
        ({"loser": "a"}, SamePlayerError, "loser", "'a' is on both sides"),
        ({"ladder": "elo"}, UnknownLadderError, "ladder", "must be one of table42, fibs"),
        ({"ladder": "boosted"}, UnknownLadderError, "ladder", "got 'boosted'"),
        ({"ladder": None}, UnknownLadderError, "ladder", "got None"),
        ({"cube": 3}, InvalidInputError, "cube", "must be one of 1, 2, 4"),
        ({"cube": 128}, InvalidInputError, "cube", "got 128"),
        ({"cube": True}, InvalidInputError, "cube", "got True"),
        ({"cube": 2.0}, InvalidInputError, "cube", "got 2.0"),
        ({"match_length": 5}, InvalidInputError, "match_length", "None (or 1) on table42"),
        ({"ladder": "fibs"}, InvalidInputError, "match_length", "whole number, got None"),
        ({"ladder": "fibs", "match_length": 0}, InvalidInputError, "match_length", "1 and 99"),
        ({"ladder": "fibs", "match_length": 100}, InvalidInputError, "match_length", "got 100"),
        ({"ladder": "fibs", "match_length": 5.0}, InvalidInputError, "match_length", "5.0"),
        ({"finished_at": math.nan}, InvalidInputError, "finished_at", "finite"),
        ({"finished_at": math.inf}, InvalidInputError, "finished_at", "finite"),
        ({"finished_at": "1700000000"}, InvalidInputError, "finished_at", "must be a number"),
        ({"finished_at": True}, InvalidInputError, "finished_at", "must be a number"),
        ({"finished_at": -1.0}, InvalidInputError, "finished_at", "between 0 and"),
        ({"finished_at": 10**400}, InvalidInputError, "finished_at", "finite"),
        ({"reason": "podium"}, InvalidInputError, "reason", "must be one of backgammon"),
        ({"reason": None}, InvalidInputError, "reason", "got None"),
        ({"winner": ""}, InvalidInputError, "winner", "must not be empty"),
        ({"winner": "x" * 65}, InvalidInputError, "winner", "at most 64 characters, got 65"),
        ({"winner": "{a}"}, InvalidInputError, "winner", "must not contain '{' or '}'"),
        ({"loser": "b\n"}, InvalidInputError, "loser", "control characters"),
        ({"loser": 7}, InvalidInputError, "loser", "must be a str, got 7"),
    ],
)
async def test_settle_rejects_bad_input(
    store: RatingStore, changes: dict[str, Any], error: type[Exception], field: str, text: str
) -> None:
    with pytest.raises(error) as caught:
        await store.settle("g", **{**GOOD, **changes})
    assert isinstance(caught.value, RatingError) and isinstance(caught.value, ValueError)
    assert caught.value.field == field  # type: ignore[attr-defined]
    assert str(caught.value).startswith(f"{field}: ")
    assert text in str(caught.value)


@pytest.mark.parametrize(
    ("game_id", "text"),
    [("", "must not be empty"), ("g" * 129, "at most 128"), ("a}b", "'{' or '}'"),
     (None, "must be a str"), ("g\x00", "control characters")],
)
async def test_settle_rejects_bad_game_ids(store: RatingStore, game_id: Any, text: str) -> None:
    with pytest.raises(InvalidInputError, match=f"^game_id: .*{text}"):
        await store.settle(game_id, **GOOD)


async def test_nothing_is_written_by_rejected_calls(
    store: RatingStore, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    with pytest.raises(InvalidInputError):
        await store.settle("g", **{**GOOD, "cube": 3})
    assert [key async for key in redis_client.scan_iter(match=f"{key_prefix}*")] == []


@pytest.mark.parametrize(
    ("players", "prizes", "error", "field", "text"),
    [
        (["a", "a"], (50, 25, 15), SamePlayerError, "players", "names 'a' twice"),
        ([], (50, 25, 15), InvalidInputError, "players", "1 to 3 players, got 0"),
        (["a", "b", "c", "d"], (50, 25, 15), InvalidInputError, "players", "got 4"),
        ("abc", (50, 25, 15), InvalidInputError, "players", "must be a list"),
        (["a", ""], (50, 25, 15), InvalidInputError, "players", "must not be empty"),
        (["a", "b"], (50,), InvalidInputError, "prizes", "a prize for each of the 2"),
        (["a"], (-5,), InvalidInputError, "prizes", "between 0 and 1000, got -5"),
        (["a"], (2.5,), InvalidInputError, "prizes", "whole number"),
        (["a"], 50, InvalidInputError, "prizes", "must be a list"),
    ],
)
async def test_award_podium_rejects_bad_input(
    store: RatingStore, players: Any, prizes: Any, error: type[Exception], field: str, text: str
) -> None:
    with pytest.raises(error) as caught:
        await store.award_podium("cup", players, prizes, awarded_at=T)
    assert caught.value.field == field  # type: ignore[attr-defined]
    assert text in str(caught.value)


async def test_award_podium_rejects_bad_ids_and_times(store: RatingStore) -> None:
    with pytest.raises(InvalidInputError, match=r"^tournament_id: must not contain"):
        await store.award_podium("{cup}", ["a"])
    with pytest.raises(InvalidInputError, match=r"^awarded_at: must be a finite number"):
        await store.award_podium("cup", ["a"], awarded_at=math.nan)


@pytest.mark.parametrize(
    ("changes", "error", "field"),
    [
        ({"points": 0}, InvalidInputError, "points"),
        ({"points": 193}, InvalidInputError, "points"),
        ({"points": 1.0}, InvalidInputError, "points"),
        ({"loser": "a"}, SamePlayerError, "loser"),
        ({"finished_at": math.inf}, InvalidInputError, "finished_at"),
        ({"winner": "}"}, InvalidInputError, "winner"),
    ],
)
async def test_add_boosted_points_rejects_bad_input(
    store: RatingStore, changes: dict[str, Any], error: type[Exception], field: str
) -> None:
    good: dict[str, Any] = {"winner": "a", "loser": "b", "points": 2, "finished_at": T}
    with pytest.raises(error) as caught:
        await store.add_boosted_points("g", **{**good, **changes})
    assert caught.value.field == field  # type: ignore[attr-defined]


async def test_reads_reject_bad_input(store: RatingStore) -> None:
    with pytest.raises(UnknownLadderError):
        await store.rating("a", "boosted")
    with pytest.raises(UnknownLadderError):
        await store.history("a", "elo")
    with pytest.raises(UnknownLadderError):
        await store.leaderboard("chess")
    with pytest.raises(InvalidInputError, match=r"^limit: must be between 1 and 100, got 0"):
        await store.leaderboard("table42", limit=0)
    with pytest.raises(InvalidInputError, match=r"^limit: .* got 101"):
        await store.leaderboard("table42", limit=101)
    with pytest.raises(InvalidInputError, match=r"^offset: .* got -1"):
        await store.leaderboard("table42", offset=-1)
    with pytest.raises(InvalidInputError, match=r"^limit: "):
        await store.history("a", "table42", limit=0)
    with pytest.raises(InvalidInputError, match=r"^at: must be a finite number"):
        await store.recent_games("a", math.nan)
    with pytest.raises(InvalidInputError, match=r"^player: must not be empty"):
        await store.rank("", "table42")


def test_store_options_are_checked(redis_client: aioredis.Redis) -> None:
    with pytest.raises(InvalidInputError, match=r"^prefix: must not contain"):
        RatingStore(redis_client, prefix="a{b}:")
    with pytest.raises(InvalidInputError, match=r"^history_limit: "):
        RatingStore(redis_client, history_limit=0)
    with pytest.raises(InvalidInputError, match=r"^late_grace: "):
        RatingStore(redis_client, late_grace=-1)
    assert RatingStore(redis_client, prefix="x:").prefix == "x:"

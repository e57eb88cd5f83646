"""Each rating formula's three forms give the same numbers for the same inputs.

A formula the store applies exists three times: the pure function (``table42.change``,
``fibs.change``), the settle script that applies it inside Redis
(``rating_plugin/lua/settle_table42.lua``, ``settle_fibs.lua``, run here through
``RatingStore.settle`` against a real Redis) and the replay's inline copy
(``rating_plugin.analysis.replay.Replayer``). Each row of the tables below goes through all
three and every number must be equal, bit for bit: ratings after, changes, K, expected
scores (the replay keeps no expected score: ratings and K). Classic Elo and the stakes
preview exist only as Python functions, so they have no other form to agree with.

The rows include exact halves, which Table42 rounds away from zero (Go's ``math.Round``; a
round-half-to-even would give 2 for 2.5 and -2 for -2.5). The store's K values (32 and 16)
and divisor (1200) never make an exact half, so the K and divisor rows replace the store's
constants (``rating_plugin.store._K_NORMAL``/``_K_HEAVY``, ``table42.DIVISOR``, read at each
settlement) for the duration of the row; the replay takes the same values as its ``Rules``
and the pure function as its arguments.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import cast

import pytest

import rating_plugin.store
from rating_plugin import fibs, table42
from rating_plugin.analysis.replay import PlayerState, Replayer, Rules
from rating_plugin.logformat import GameRecord
from rating_plugin.store import RatingStore

T = 1_700_000_000.0
#: Finish times (integer ms) of a heavy week: 50 games in the 6 days before T.
HEAVY_WEEK = [int((T - 6 * 24 * 3600) * 1000) + i for i in range(table42.HEAVY_WEEK_GAMES)]
_ids = itertools.count()


@dataclass(frozen=True)
class Table42Row:
    """One Table42 game: ratings, cube, which side had a heavy week, K (below / from the
    heavy-week count), divisor, and the changes the row is about (checked on all three)."""

    why: str
    winner: int
    loser: int
    cube: int = 1
    winner_heavy: bool = False
    loser_heavy: bool = False
    k: int = table42.DEFAULT_K
    heavy_k: int = table42.HEAVY_WEEK_K
    divisor: int = table42.DIVISOR
    expected: tuple[int, int] | None = None


TABLE42_ROWS = [
    Table42Row("equal ratings", 1500, 1500, expected=(16, -16)),
    Table42Row("the documented example", 1500, 1800, cube=2, loser_heavy=True,
               expected=(24, -12)),
    Table42Row("both heavy, every factor", 1720, 1311, cube=16, winner_heavy=True,
               loser_heavy=True),
    Table42Row("negative ratings", -300, 200, cube=64),
    Table42Row("1.0.5's divisor", 1900, 1400, cube=4, divisor=400),
    Table42Row("just above a half (40.50002)", 1000, 2526, cube=4, expected=(41, -41)),
    Table42Row("the favourite wins", 2526, 1000, cube=4),
    Table42Row("just below a half (5.49994)", 1337, 1000, winner_heavy=True,
               loser_heavy=True),
    Table42Row("0.5 and -0.5 round away from zero", 1500, 1500, k=1, expected=(1, -1)),
    Table42Row("2.5 and -2.5 round away from zero", 1500, 1500, k=5, expected=(3, -3)),
    Table42Row("4.5 at a 1.5 cube coefficient", 1500, 1500, cube=8, k=6, expected=(5, -5)),
    Table42Row("1.5 for the heavy winner, -0.5 for the loser", 1500, 1500, winner_heavy=True,
               k=1, heavy_k=3, expected=(2, -1)),
    Table42Row("the loser far stronger: the power overflows, E = 0", 0, 400_000, cube=64,
               expected=(64, -64)),
    Table42Row("the winner far stronger: E = 1, a change of -0.0 is 0", 400_000, 0,
               expected=(0, 0)),
]


@dataclass(frozen=True)
class FibsRow:
    """One FIBS match: ratings, length and both experiences before it."""

    why: str
    winner: float
    loser: float
    length: int
    winner_experience: int = 0
    loser_experience: int = 0


FIBS_ROWS = [
    FibsRow("equal new players, 1 point", 1500.0, 1500.0, 1),
    FibsRow("the upset, 5 points", 1432.87, 1711.05, 5, 150, 399),
    FibsRow("established players, 25 points", 1823.5, 1611.25, 25, 400, 401),
    FibsRow("the longest match", 1500.0, 1499.999999, 99, 1000, 0),
    FibsRow("negative and fractional ratings", -12.125, 3.0000000000000004, 3, 9, 10),
    FibsRow("the loser far stronger: the power overflows", 0.0, 10_000_000.0, 9, 37, 2),
    FibsRow("the winner far stronger: nothing at stake", 10_000_000.0, 0.0, 9, 37, 2),
]


def seed_replay(players: dict[str, PlayerState], name: str, rating: float, *,
                heavy: bool = False, experience: int = 0) -> None:
    state = players[name] = PlayerState(rating)
    state.experience = experience
    if heavy:
        state.window = array("q", HEAVY_WEEK)
        state.newest = HEAVY_WEEK[-1]


async def seed_store(store: RatingStore, ladder: str, name: str, rating: float, *,
                     heavy: bool = False, experience: int = 0) -> None:
    fields = {"rating": repr(rating)}
    if ladder == "fibs":
        fields["experience"] = str(experience)
    await cast("Awaitable[int]", store.redis.hset(store.keys.rating(ladder, name),
                                                  mapping=fields))
    if heavy:
        await store.redis.zadd(store.keys.window(name),
                               {f"seed-{i}": at for i, at in enumerate(HEAVY_WEEK)})


@pytest.mark.parametrize("row", TABLE42_ROWS, ids=lambda row: row.why)
async def test_table42_python_lua_and_replay_agree(
    row: Table42Row, store: RatingStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = next(_ids)
    winner, loser = f"w{n}", f"l{n}"
    winner_k = row.heavy_k if row.winner_heavy else row.k
    loser_k = row.heavy_k if row.loser_heavy else row.k

    python = table42.change(row.winner, row.loser, cube=row.cube, winner_k=winner_k,
                            loser_k=loser_k, divisor=row.divisor)

    monkeypatch.setattr(rating_plugin.store, "_K_NORMAL", row.k)
    monkeypatch.setattr(rating_plugin.store, "_K_HEAVY", row.heavy_k)
    monkeypatch.setattr(table42, "DIVISOR", row.divisor)
    await seed_store(store, "table42", winner, row.winner, heavy=row.winner_heavy)
    await seed_store(store, "table42", loser, row.loser, heavy=row.loser_heavy)
    lua = await store.settle(f"g{n}", ladder="table42", winner=winner, loser=loser,
                             cube=row.cube, finished_at=T)

    replay = Replayer(Rules(divisor=row.divisor, k=row.k, heavy_k=row.heavy_k))
    seed_replay(replay.table42, winner, row.winner, heavy=row.winner_heavy)
    seed_replay(replay.table42, loser, row.loser, heavy=row.loser_heavy)
    replayed = replay.apply(GameRecord("table42", 1, f"g{n}", "normal", T, row.cube, None,
                                       winner, loser, row.winner, row.loser))

    changes = (python.winner, python.loser)
    if row.expected is not None:
        assert changes == row.expected
    after = (row.winner + python.winner, row.loser + python.loser)
    assert (lua.winner.change, lua.loser.change) == changes
    assert (lua.winner.rating_after, lua.loser.rating_after) == after
    assert replayed.after == after
    assert (lua.winner.k, lua.loser.k) == replayed.k == (python.winner_k, python.loser_k)
    assert (lua.winner.expected_score, lua.loser.expected_score) == (
        python.winner_expected, python.loser_expected
    )
    assert lua.winner.cube_coefficient == python.coefficient
    assert [type(value) for value in (*after, *replayed.after)] == [int] * 4


@pytest.mark.parametrize("row", FIBS_ROWS, ids=lambda row: row.why)
async def test_fibs_python_lua_and_replay_agree(row: FibsRow, store: RatingStore) -> None:
    n = next(_ids)
    winner, loser = f"w{n}", f"l{n}"

    python = fibs.change(row.winner, row.loser, match_length=row.length,
                         winner_experience=row.winner_experience,
                         loser_experience=row.loser_experience)

    await seed_store(store, "fibs", winner, row.winner, experience=row.winner_experience)
    await seed_store(store, "fibs", loser, row.loser, experience=row.loser_experience)
    lua = await store.settle(f"m{n}", ladder="fibs", winner=winner, loser=loser,
                             match_length=row.length, finished_at=T)

    replay = Replayer(Rules())
    seed_replay(replay.fibs, winner, row.winner, experience=row.winner_experience)
    seed_replay(replay.fibs, loser, row.loser, experience=row.loser_experience)
    replayed = replay.apply(GameRecord("fibs", 1, f"m{n}", "normal", T, 1, row.length,
                                       winner, loser, row.winner, row.loser))

    after = (row.winner + python.winner, row.loser + python.loser)
    assert (lua.winner.change, lua.loser.change) == (python.winner, python.loser)
    assert (lua.winner.rating_after, lua.loser.rating_after) == after
    assert replayed.after == after
    assert (lua.winner.multiplier, lua.loser.multiplier) == (
        python.winner_multiplier, python.loser_multiplier
    )
    assert lua.winner.expected_score == python.winner_probability
    assert (lua.winner.experience_before, lua.loser.experience_before) == \
        replayed.experience == (row.winner_experience, row.loser_experience)

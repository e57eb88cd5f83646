"""Replay reproduces the live store exactly: games settled through the real RatingStore (real
Redis), exported in applied order, replayed under the current rules, every number compared."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import cast

import pytest
import redis.asyncio as aioredis

from rating_plugin.analysis import gamelog
from rating_plugin.analysis.gamelog import GameRecord, LogRecord, PodiumRecord
from rating_plugin.analysis.replay import Replayer, Rules, mismatch, standings
from rating_plugin.analysis.synth import SynthConfig, generate
from rating_plugin.errors import LogIncompleteError, LogRecordMissingError
from rating_plugin.store import RatingStore
from tests.hermetic import bare_env

#: Small on purpose: two-day-late settlements then meet trimmed windows, so the replay must
#: follow the store's trimming rule, not an exact 7-day count.
LATE_GRACE = 600.0
ROOT = Path(__file__).resolve().parents[2]


def scenario() -> list[LogRecord]:
    """Table42 games (heavy-week players, late settlements, podiums), then FIBS matches."""
    table = generate(SynthConfig(
        games=600, players=8, heavy_share=0.375, heavy_weight=4, days=10, late_share=0.15,
        late_seconds=2 * 86400, podium_every=75, seed=11,
    ))
    fibs = generate(SynthConfig(games=120, players=10, ladder="fibs", days=5, seed=12))
    return [*table, *fibs]


async def settle_all(store: RatingStore, records: list[LogRecord]) -> None:
    for record in records:
        if isinstance(record, PodiumRecord):
            await store.award_podium(record.tournament_id, [p.player for p in record.places],
                                     [p.prize for p in record.places],
                                     awarded_at=record.awarded_at)
        else:
            await store.settle(record.game_id, ladder=record.ladder, winner=record.winner,
                               loser=record.loser, cube=record.cube,
                               match_length=record.match_length,
                               finished_at=record.finished_at, reason=record.reason)


@pytest.fixture
def store(redis_client: aioredis.Redis, key_prefix: str) -> RatingStore:
    return RatingStore(redis_client, prefix=key_prefix, late_grace=LATE_GRACE)


async def test_replay_reproduces_every_live_rating(store: RatingStore) -> None:
    records = scenario()
    await settle_all(store, records)
    out = io.StringIO()
    assert await store.export_log(out, batch=37) == len(records)
    exported = list(gamelog.read_jsonl(io.StringIO(out.getvalue()), "export"))

    # Applied order: seq 1, 2, ... on each ladder, podium awards in their place.
    for ladder in ("table42", "fibs"):
        seqs = [r.seq for r in exported if r.ladder == ladder]
        assert seqs == list(range(1, len(seqs) + 1))
    assert sum(isinstance(r, PodiumRecord) for r in exported) == 8
    assert {r.game_id for r in exported if isinstance(r, GameRecord)} == {
        r.game_id for r in records if isinstance(r, GameRecord)
    }

    # Every logged number (ratings before/after, K, window counts, experience) reproduced.
    replayer = Replayer(Rules.current(late_grace=LATE_GRACE))
    problems = [m for r in exported if (m := mismatch(r, replayer.apply(r))) is not None]
    assert problems == []

    # Every player's live rating, counts and experience equal the replayed state.
    for ladder, players in (("table42", replayer.table42), ("fibs", replayer.fibs)):
        for name, state in players.items():
            live = await store.rating(name, ladder)
            assert (live.rating, live.games, live.wins, live.losses) == (
                state.rating, state.games, state.wins, state.losses
            ), (ladder, name)
            if ladder == "fibs":
                assert live.experience == state.experience
        board = await store.leaderboard(ladder, limit=100)
        assert [(e.player, e.rating, e.rank) for e in board] == standings(players, ladder=ladder)

    # The scenario exercises K 16 and the trimming rule: without trimming (an exact count
    # with a 30-day grace), some logged K or window count would not be reproduced.
    assert any(r.winner_k == 16 or r.loser_k == 16 for r in exported if isinstance(r, GameRecord))
    exact = Replayer(Rules.current(late_grace=30 * 86400))
    assert any(mismatch(r, exact.apply(r)) is not None for r in exported)


async def test_the_log_is_written_once_per_game_whatever_the_retries(
    store: RatingStore, redis_client: aioredis.Redis
) -> None:
    for _ in range(3):
        await store.settle("g1", ladder="table42", winner="a", loser="b", finished_at=1e9)
        await store.award_podium("t1", ["a", "b"], awarded_at=1e9)
        await store.settle("m1", ladder="fibs", winner="a", loser="b", match_length=3,
                           finished_at=1e9)
    async def log(ladder: str) -> list[bytes]:
        return await cast("Awaitable[list[bytes]]",
                          redis_client.lrange(store.keys.log(ladder), 0, -1))

    assert await log("table42") == [
        store.keys.game("g1").encode(), store.keys.podium("t1").encode()
    ]
    assert await log("fibs") == [store.keys.game("m1").encode()]
    items = [item async for item in store.applied("table42")]
    assert [item.seq for item in items] == [1, 2]


async def test_an_empty_store_exports_nothing(store: RatingStore) -> None:
    out = io.StringIO()
    assert await store.export_log(out, fmt="csv") == 0
    assert out.getvalue() == ",".join(gamelog.CSV_COLUMNS) + "\n"


async def test_settlements_older_than_the_log_make_the_export_refuse(
    store: RatingStore, redis_client: aioredis.Redis
) -> None:
    await store.settle("g1", ladder="table42", winner="a", loser="b", finished_at=1e9)
    await redis_client.incrby(store.keys.seq("table42"), 4)  # as if 4 came before the log
    with pytest.raises(LogIncompleteError, match=r"^table42: 5 settlements applied but only 1"):
        await store.export_log(io.StringIO())


async def test_a_record_deleted_by_hand_makes_the_export_refuse(
    store: RatingStore, redis_client: aioredis.Redis
) -> None:
    await store.settle("g1", ladder="table42", winner="a", loser="b", finished_at=1e9)
    await store.settle("g2", ladder="table42", winner="b", loser="a", finished_at=1e9 + 60)
    await redis_client.delete(store.keys.game("g2"))
    with pytest.raises(LogRecordMissingError, match=r"^table42: settlement 2 of the applied"):
        await store.export_log(io.StringIO())


def test_cli_export_then_replay_check(redis_url: str, key_prefix: str, tmp_path: Path) -> None:
    """The commands an operator runs: export from Redis, then replay --check the file, and
    replay --check straight from Redis."""
    records = scenario()

    async def setup() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            await settle_all(RatingStore(client, prefix=key_prefix, late_grace=LATE_GRACE),
                             records)
        finally:
            await client.aclose()

    async def cleanup() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            keys = [key async for key in client.scan_iter(match=f"{key_prefix}*", count=1000)]
            for start in range(0, len(keys), 500):
                await client.unlink(*keys[start:start + 500])
        finally:
            await client.aclose()

    asyncio.run(setup())
    try:
        log = tmp_path / "games.jsonl"
        cli = [sys.executable, "-m", "rating_plugin"]
        env = bare_env()
        done = subprocess.run(
            [*cli, "export", "--redis-url", redis_url, "--prefix", key_prefix, "--out", str(log)],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == f"exported {len(records)} records (table42, fibs)\n"
        assert sum(1 for _ in log.open()) == len(records)
        for source in ([str(log)], ["--redis-url", redis_url, "--prefix", key_prefix]):
            for ladder in ("table42", "fibs"):
                done = subprocess.run(
                    [*cli, "replay", *source, "--check", "--late-grace", str(LATE_GRACE),
                     "--ladder", ladder, "--json"],
                    capture_output=True, text=True, env=env, timeout=60, check=False,
                )
                assert done.returncode == 0, done.stderr
                report = json.loads(done.stdout)
                assert report["check"] == {"mismatches": 0, "first": []}
        # calibrate reads the same games straight from the store, or from the file.
        games = sum(1 for r in records if isinstance(r, GameRecord) and r.ladder == "table42")
        for source in ([str(log)], ["--redis-url", redis_url, "--prefix", key_prefix]):
            done = subprocess.run([*cli, "calibrate", *source, "--json"], capture_output=True,
                                  text=True, env=env, timeout=60, check=False)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["games"] == games
            assert "warning: only 600 games" in done.stderr
        # With the store's default grace the replay cannot reproduce it: exit 1, one line.
        done = subprocess.run(
            [*cli, "replay", str(log), "--check"],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )
        assert done.returncode == 1
        *warnings, error = done.stderr.splitlines()
        assert all(line.startswith("warning: ") for line in warnings)
        assert error.startswith("python -m rating_plugin replay: error: replay --check: ")
        assert "not reproduced; first: seq " in error
    finally:
        asyncio.run(cleanup())

"""Finished games' costly reads over real servers and a real Redis (docs/http-api.md,
"Games"): a record served from the bytes stored at the game's end (gzip as
it is, or decompressed), the form stored before still read, chat sent after the end in the
answer; reviews computed once per game in a worker, kept beside the record for every node,
their queue bounded and abandoned work dropped; the cost budget's 429; and a node answering
its sockets while it serves a hundred big records."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from typing import Any, cast

import aiohttp
import msgpack
import redis.asyncio as aioredis
from server_helpers import (
    RunningServer,
    StartServer,
    connect,
    eventually,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.app import COST_GATE, REVIEWS
from server.store.games import pack_record
from server.tables.records import game_events, game_record


async def get(server: RunningServer, path: str, *, token: str | None = None,
              encoding: str | None = None) -> tuple[int, Any, dict[str, str]]:
    """Status, JSON body and headers (``encoding``: the ``Accept-Encoding`` sent; aiohttp
    sends gzip and decompresses by default)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if encoding is not None:
        headers["Accept-Encoding"] = encoding
    async with aiohttp.ClientSession() as http, http.get(server.http + path,
                                                         headers=headers) as response:
        return response.status, await response.json(), dict(response.headers)


async def finished_game(server: RunningServer, seed: int = 7) -> tuple[str, str]:
    """A game played out on ``server`` between alice and bob: (table, game id)."""
    ta, tb = await register(server, "alice"), await register(server, "bob")
    a, b = await connect(server, ta), await connect(server, tb)
    table, _ = await seat_two(server, a, b)
    over = await play_out({0: a, 1: b}, table)
    await a.close()
    await b.close()
    return table, str(over["game_id"])


def chat_message(table: str, n: int, text: str = "hello") -> dict[str, Any]:
    return {"type": "chat", "table": table, "channel": "players", "msg": f"m{n:05d}",
            "from": "alice", "name": "alice", "text": text, "at": 1.0e9 + n}


async def test_a_record_is_served_from_its_stored_bytes_gzip_or_not(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
) -> None:
    server = await start_server(dice_factory=scripted(7))
    table, game_id = await finished_game(server)
    key = f"{key_prefix}{{g:{game_id}}}:served"
    assert await redis_client.hexists(key, "body")  # type: ignore[misc]
    assert not await redis_client.exists(f"{key_prefix}{{g:{game_id}}}:record")
    status, zipped, headers = await get(server, f"/api/games/{game_id}", encoding="gzip")
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in headers["Vary"]
    status, plain, headers = await get(server, f"/api/games/{game_id}", encoding="identity")
    assert status == 200 and "Content-Encoding" not in headers
    assert zipped == plain and plain["game_id"] == game_id and plain["chat"] == []
    assert plain["events"][0]["type"] == "game_start" and "state" in plain["events"][-1]
    # Chat sent after the end is in the answer: the body is made again, once.
    records = server.lobby.records
    await records.append_chat(table, 1, chat_message(table, 1, "gg"))
    status, again, _ = await get(server, f"/api/games/{game_id}")
    assert status == 200 and [m["text"] for m in again["chat"]] == ["gg"]
    assert {k: v for k, v in again.items() if k != "chat"} == \
        {k: v for k, v in plain.items() if k != "chat"}
    # The .mat download is stored text too.
    async with aiohttp.ClientSession() as http, \
            http.get(f"{server.http}/api/games/{game_id}/mat") as response:
        assert response.status == 200
        assert "Game 1" in await response.text()


async def test_a_record_of_the_form_stored_before_is_served_and_converted(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
) -> None:
    server = await start_server(dice_factory=scripted(5))
    table, game_id = await finished_game(server, seed=5)
    _, new_form, _ = await get(server, f"/api/games/{game_id}")
    # The same game as the server stored it before: msgpack, lean events, its own key.
    log = await server.lobby.persistence.events_since(table, 0)
    packed = [msgpack.packb(e) for e in game_events(log, game_id)]
    over = next(e for e in log if e.get("type") == "game_over")
    record = game_record(
        table=table, mode="competitive", match_length=0, tournament_id=None,
        result={"game_id": game_id, "game_no": 1, "winner_side": over["winner_side"],
                "points": over["points"], "reason": "played", "kind": "single",
                "finished_at": new_form["finished_at"], "rating": {"rated": True}},
        players=["alice", "bob"], names=["alice", "bob"], events=packed,
        changes=dict(zip(["alice", "bob"], new_form["changes"], strict=True)),
        mat_game="old mat", mat_match=None)
    served_key = f"{key_prefix}{{g:{game_id}}}:served"
    old_key = f"{key_prefix}{{g:{game_id}}}:record"
    await redis_client.delete(served_key)
    await redis_client.set(old_key, pack_record(record), px=3_600_000)
    await server.lobby.records.append_chat(table, 1, chat_message(table, 2))
    status, old_form, _ = await get(server, f"/api/games/{game_id}", encoding="identity")
    assert status == 200
    assert old_form["events"] == new_form["events"]
    assert [m["msg"] for m in old_form["chat"]] == ["m00002"]
    for field in ("game_id", "players", "names", "winner", "points", "changes", "rated"):
        assert old_form[field] == new_form[field], field
    # Converted once: the served form holds it now, with the old record's time to live.
    assert not await redis_client.exists(old_key)
    assert 0 < await redis_client.pttl(served_key) <= 3_600_000
    async with aiohttp.ClientSession() as http, \
            http.get(f"{server.http}/api/games/{game_id}/mat") as response:
        assert await response.text() == "old mat"


async def reviews(server: RunningServer, game_id: str, count: int) -> list[Any]:
    answers = await asyncio.gather(*(get(server, f"/api/games/{game_id}/review")
                                     for _ in range(count)))
    assert all(status == 200 for status, _, _ in answers), answers
    return [body for _, body, _ in answers]


async def test_concurrent_reviews_of_a_game_compute_it_once_for_every_node(
    start_nodes: Any, redis_client: aioredis.Redis, key_prefix: str,
) -> None:
    one, two = cast(list[RunningServer], await start_nodes(2, review_workers=1))
    _, game_id = await finished_game(one)
    first = await reviews(one, game_id, 8)
    assert all(body == first[0] for body in first)
    assert first[0]["game_id"] == game_id and first[0]["decisions"]
    jobs = one.app[REVIEWS]
    assert jobs.computed == 1 and len(jobs) == 0
    kept = await redis_client.hget(f"{key_prefix}{{g:{game_id}}}:served",  # type: ignore[misc]
                                   "review")
    assert json.loads(zlib.decompress(kept, 31)) == first[0]
    # Kept: the same node and the other one serve it without computing it again.
    assert (await reviews(one, game_id, 2))[0] == first[0]
    assert (await reviews(two, game_id, 3))[0] == first[0]
    assert jobs.computed == 1 and two.app[REVIEWS].computed == 0


async def test_an_abandoned_review_nobody_waits_for_is_dropped(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(3), review_workers=1)
    _, game_id = await finished_game(server, seed=3)
    jobs = server.app[REVIEWS]
    url = f"{server.http}/api/games/{game_id}/review"
    async with jobs.slots:  # the only worker is busy: the review waits for it
        # One client gives up (its connection closes): nobody else waits, the job goes.
        async with aiohttp.ClientSession() as http:
            try:
                async with http.get(url, timeout=aiohttp.ClientTimeout(total=0.5)):
                    raise AssertionError("answered while the worker was busy")
            except TimeoutError:
                pass
        await eventually(lambda: jobs.cancelled == 1)
        assert len(jobs) == 0
        # Two wait, one gives up: the other still gets the review.
        async with aiohttp.ClientSession() as http:
            patient = asyncio.ensure_future(get(server, f"/api/games/{game_id}/review"))
            await eventually(lambda: jobs.is_running(game_id))
            try:
                async with http.get(url, timeout=aiohttp.ClientTimeout(total=0.5)):
                    raise AssertionError("answered while the worker was busy")
            except TimeoutError:
                pass
            await asyncio.sleep(0.5)  # past the waits' poll: the leaver is noticed
            assert jobs.cancelled == 1 and jobs.is_running(game_id)
    status, body, _ = await patient
    assert status == 200 and body["game_id"] == game_id
    assert jobs.computed == 1 and jobs.cancelled == 1


async def test_a_full_review_queue_answers_busy_with_retry_after(
    start_server: StartServer,
) -> None:
    server = await start_server(review_workers=1, review_queue_max=1)
    records = server.lobby.records
    for n in (1, 2):
        await records.save({
            "game_id": f"t{n}-g1", "game_no": 1, "table": f"t{n}", "mode": "competitive",
            "match_length": 0, "tournament_id": None, "players": ["alice", "bob"],
            "names": ["alice", "bob"], "winner": 0, "points": 1, "result": "single",
            "rated": False, "changes": [None, None], "finished_at": time.time(),
            "events": [], "mat_game": "", "mat_match": None})
    jobs = server.app[REVIEWS]
    async with jobs.slots:
        waiting = asyncio.ensure_future(get(server, "/api/games/t1-g1/review"))
        await eventually(lambda: jobs.is_running("t1-g1"))
        status, body, headers = await get(server, "/api/games/t2-g1/review")
        assert status == 503 and body["error"]["code"] == "busy"
        assert int(headers["Retry-After"]) >= 1
        waiting.cancel()


async def test_the_cost_budget_answers_429_with_retry_after(
    start_server: StartServer,
) -> None:
    # Refilled one unit in 100 s: however slow the reads, the budget runs out in six.
    server = await start_server(dice_factory=scripted(7), http_cost_rate=0.01,
                                http_cost_burst=3.0)
    _, game_id = await finished_game(server)
    statuses = []
    for _ in range(6):
        status, body, headers = await get(server, f"/api/games/{game_id}")
        statuses.append(status)
        if status == 429:
            assert body["error"]["code"] == "rate_limited"
            assert int(headers["Retry-After"]) >= 1
    # 3 units: a first read takes 2 when it starts (its cost unknown here), then what it
    # cost (about 1: 8 KB sent); the budget runs out on the third or fourth.
    assert statuses[:2] == [200, 200] and statuses[-1] == 429
    assert server.app[COST_GATE].refused == statuses.count(429)
    # The budget is per address: the history (not a costly route) still answers.
    assert (await get(server, "/api/players/alice/games"))[0] == 200


async def test_a_node_answers_its_sockets_while_it_serves_a_hundred_big_records(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(7))
    table, game_id = await finished_game(server)
    records = server.lobby.records
    text = "x" * 290
    for n in range(1000):  # a thousand chat lines after the end: a record of about 0.5 MB
        await records.append_chat(table, 1, chat_message(table, n, text))
    _, whole, _ = await get(server, f"/api/games/{game_id}")
    assert len(whole["chat"]) == 1000
    player = await connect(server, await register(server, "carol"))
    pongs = 0

    async def ping_while(reads: asyncio.Future[Any]) -> None:
        nonlocal pongs
        while not reads.done():
            reply = await player.request({"type": "ping"}, timeout=60)
            assert reply["type"] == "pong"
            pongs += 1
            await asyncio.sleep(0.01)

    async def read(encoding: str) -> int:
        status, body, _ = await get(server, f"/api/games/{game_id}", encoding=encoding)
        assert len(body["chat"]) == 1000
        return status

    reads = asyncio.gather(*(read("gzip" if n % 2 else "identity") for n in range(100)))
    await asyncio.gather(reads, ping_while(reads))
    assert reads.result() == [200] * 100
    assert pongs >= 1


async def test_a_killed_review_worker_is_replaced(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
) -> None:
    server = await start_server(dice_factory=scripted(7), review_workers=1)
    _, game_id = await finished_game(server)
    first = await reviews(server, game_id, 1)
    jobs = server.app[REVIEWS]
    pool = jobs._executor
    assert isinstance(pool, ProcessPoolExecutor)
    for pid in list(pool._processes or {}):  # the worker dies (killed, out of memory)
        os.kill(pid, signal.SIGKILL)
    await eventually(lambda: pool._broken is not False)
    await redis_client.hdel(f"{key_prefix}{{g:{game_id}}}:served", "review")  # type: ignore[misc]
    assert await reviews(server, game_id, 1) == first  # computed again, by a new worker
    assert jobs.computed == 2 and jobs._executor is not pool

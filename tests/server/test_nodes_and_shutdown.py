"""Two nodes on one Redis; clean shutdown (1001, nothing finished is lost); health."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable
from typing import Any, cast

import aiohttp
import pytest
import redis.asyncio as aioredis
from server_helpers import (
    StartServer,
    connect,
    eventually,
    guest,
    play_out,
    register,
    scripted,
    seat_two,
)

from rating_plugin.store import RatingStore
from server.embedded_redis import EmbeddedRedis
from server.store.persistence import _aw


async def test_two_nodes_one_game(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one = await start_server(dice_factory=scripted(7), node_id="node-one")
    two = await start_server(dice_factory=scripted(7), node_id="node-two")
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"), binary=True)
    table, start = await seat_two(one, a, b)  # bob joins through node two
    assert start["state"]["seats"][1]["player"] == "bob"
    assert table in one.lobby.tables and table not in two.lobby.tables
    listed = await b.request({"type": "list_tables"})
    assert listed["tables"][0]["node"] == "node-one"
    over = await play_out({0: a, 1: b}, table)
    over_b = await b.expect("game_over", table=table)
    assert over_b["state"]["game"] == over["state"]["game"]
    ratings = [await a.expect("rating"), await b.expect("rating")]
    assert sorted(r["change"] for r in ratings) == [-16, 16]
    store = RatingStore(redis_client, key_prefix)
    assert (await store.rating(over["winner"], "table42")).rating == 1516


async def test_cross_node_reconnect_resumes(start_server: StartServer) -> None:
    one = await start_server(dice_factory=scripted(7), node_id="n1", grace_period=5.0)
    two = await start_server(dice_factory=scripted(7), node_id="n2", grace_period=5.0)
    token_b = await register(one, "bob")
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, token_b)
    table, _ = await seat_two(one, a, b)
    await b.close()
    await a.expect("player_disconnected", table=table)
    b2 = await connect(two, token_b, binary=True)  # comes back through the other node
    resume = await b2.expect("resume", table=table)
    await a.expect("player_reconnected", table=table)
    assert resume["side"] == 1
    b2.messages.append(resume)
    over = await play_out({0: a, 1: b2}, table)
    assert over["reason"] == "normal"


async def test_shutdown_closes_with_1001_and_keeps_finished_results(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    server = await start_server(dice_factory=scripted(7))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    w = await connect(server, await guest(server))
    table, _ = await seat_two(server, a, b)
    await w.request({"type": "watch", "table": table})

    def last_move(message: dict[str, Any]) -> bool:
        state = message.get("state") or {}
        return message.get("type") == "moved" and (state.get("game") or {}).get("phase") == "over"

    final = await play_out({0: a, 1: b}, table, stop=last_move)
    # The settlement of that game is in flight right now; stop the server at once.
    await server.stop()
    for client in (a, b, w):
        assert await client.wait_closed() == 1001
    results = await cast(
        "Awaitable[list[bytes]]", redis_client.lrange(f"{key_prefix}{{t:{table}}}:results", 0, -1)
    )
    assert len(results) == 1
    events = await cast(
        "Awaitable[list[bytes]]", redis_client.lrange(f"{key_prefix}{{t:{table}}}:events", 0, -1)
    )
    assert len(events) >= final["v"] + 1  # every event, game_over included
    store = RatingStore(redis_client, key_prefix)
    ratings = {p: (await store.rating(p, "table42")).rating for p in ("alice", "bob")}
    assert sorted(ratings.values()) == [1484, 1516]
    for player, client in (("alice", a), ("bob", b)):
        inbox = await cast(
            "Awaitable[list[bytes]]",
            redis_client.lrange(f"{key_prefix}{{p:{player}}}:inbox", 0, -1),
        )
        # Delivered once: received live before the socket closed, or kept in the inbox.
        assert len(client.of_type("rating")) + len(inbox) == 1


async def test_healthz_reports_redis(start_server: StartServer) -> None:
    with EmbeddedRedis() as own:
        server = await start_server(redis_url=own.url)
        async with aiohttp.ClientSession() as http:
            async with http.get(server.http + "/healthz") as resp:
                assert resp.status == 200 and (await resp.json())["redis"] is True
            own.stop()
            # The node's pulse thread probes Redis every redis_check_interval (0.5 s): the
            # first probe after the stop fails.
            async with asyncio.timeout(30):
                while True:
                    async with http.get(server.http + "/healthz") as resp:
                        if resp.status == 503:
                            assert (await resp.json())["redis"] is False
                            break
                        assert resp.status == 200
                    await asyncio.sleep(0.1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_python_m_server_stops_cleanly_on_sigterm(
    redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    port = _free_port()
    env = {**os.environ, "REDIS_URL": redis_url, "TABLE42_KEY_PREFIX": key_prefix,
           "TABLE42_SCRYPT_N": "2", "TABLE42_LOG_LEVEL": "WARNING"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", "--port", str(port), "--decision-time", "45",
        env=env,
    )
    try:
        async with aiohttp.ClientSession() as http:
            # Until the process answers (a fresh interpreter: seconds on a loaded machine).
            deadline = asyncio.get_running_loop().time() + 60
            while True:
                assert proc.returncode is None, "python -m server exited"
                try:
                    async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                assert asyncio.get_running_loop().time() < deadline, "never answered"
                await asyncio.sleep(0.05)
            async with http.post(f"http://127.0.0.1:{port}/api/guest") as resp:
                token = (await resp.json())["token"]

        class Running:
            ws_url = f"ws://127.0.0.1:{port}/ws"

        client = await connect(Running(), token)
        assert client.messages[0]["limits"]["decision_time"] == 45
        proc.send_signal(signal.SIGTERM)
        assert await client.wait_closed() == 1001
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_clean_stop_is_no_news_and_leaves_only_its_games(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A node stopped alone with a game in progress and a finished one: the finished table is
    done at once (nobody claims it), the node is marked stopped, and the node that starts
    next takes the game over without announcing a lost node."""
    one = await start_server(dice_factory=scripted(7), node_id="calm-one")
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    c = await connect(one, await register(one, "cat"))
    d = await connect(one, await register(one, "dan"))
    finished, _ = await seat_two(one, a, b)
    await play_out({0: a, 1: b}, finished)
    playing, _ = await seat_two(one, c, d)
    await one.stop()
    nodes = f"{key_prefix}{{nodes}}"
    assert await _aw(redis_client.hkeys(f"{nodes}:stopped")) == [b"calm-one"]
    assert await _aw(redis_client.hget(f"{key_prefix}{{t:{finished}}}:lease", "done")) == b"1"  # type: ignore[comparison-overlap]
    assert await _aw(redis_client.hget(f"{key_prefix}{{t:{playing}}}:lease", "done")) is None
    with caplog.at_level(logging.INFO):
        two = await start_server(dice_factory=scripted(7), node_id="calm-two")
        await eventually(lambda: playing in two.lobby.tables)
        await eventually(lambda: "calm-one" in two.lobby.liveness.dead_nodes)
    said = [r.getMessage() for r in caplog.records]
    assert not [m for m in said if "is gone" in m or f"table {finished}" in m], said
    assert any(f"table {playing} claimed from node calm-one" in m for m in said)

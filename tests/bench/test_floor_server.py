"""The floor server of the move benchmark (bench/floor_server.py) plays a game correctly: each
event stored in the table's log (the node's fenced append) before both players get it, a
``pong`` to ``ping``, nothing announced once the table's lease has another epoch."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest
import redis.asyncio as aioredis

ROOT = Path(__file__).resolve().parents[2]
decode = msgspec.msgpack.Decoder().decode
encode = msgspec.msgpack.Encoder().encode


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def floor(redis_url: str, key_prefix: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "floor_server.py"), "--port", str(port),
         "--redis-url", redis_url, "--key-prefix", key_prefix],
        cwd=ROOT, stdout=subprocess.PIPE, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    try:
        yield f"ws://127.0.0.1:{port}/ws"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def receive(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    async with asyncio.timeout(10):
        msg = await ws.receive()
    assert msg.type is aiohttp.WSMsgType.BINARY, msg
    return dict(decode(msg.data))


async def test_a_game_stored_before_announced(
        floor: str, session: aiohttp.ClientSession, redis_client: aioredis.Redis,
        key_prefix: str) -> None:
    a = await session.ws_connect(floor, headers={"Authorization": "Bearer alice"})
    b = await session.ws_connect(floor, headers={"Authorization": "Bearer bob"})
    assert (await receive(a))["type"] == "welcome"
    assert (await receive(b))["type"] == "welcome"
    await a.send_bytes(encode({"type": "ping", "id": 3}))
    assert await receive(a) == {"type": "pong", "ref": 3}
    await a.send_bytes(encode({"type": "create_table", "id": 1}))
    created = await receive(a)
    assert created["type"] == "table_created" and created["ref"] == 1
    table = created["table"]
    log = f"{key_prefix}{{t:{table}}}:events"
    await b.send_bytes(encode({"type": "join", "table": table}))
    starts = [await receive(a), await receive(b)]
    assert [e["type"] for e in starts] == ["game_start", "game_start"]
    assert starts[0] == starts[1] and starts[0]["v"] == 1
    stored = await redis_client.lrange(log, 0, -1)  # type: ignore[misc]
    assert [decode(x) for x in stored] == [starts[0]]
    game = starts[0]["state"]["game"]
    mover = (a, b)[game["to_act"]]
    await mover.send_bytes(encode({"type": "play", "table": table,
                                   "play": game["legal_plays"][0]}))
    moved = [await receive(a), await receive(b)]
    assert moved[0] == moved[1] and moved[0]["type"] == "moved" and moved[0]["v"] == 2
    stored = await redis_client.lrange(log, 0, -1)  # type: ignore[misc]
    assert [decode(x) for x in stored] == [starts[0], moved[0]]

    # Another owner took the table: the next move is refused by the store, never announced.
    await redis_client.hset(f"{key_prefix}{{t:{table}}}:lease", "epoch", "2")  # type: ignore[misc]
    player = (a, b)[moved[0]["changes"]["game"]["to_act"]]
    await player.send_bytes(encode({"type": "roll", "table": table}))
    # Redis answers in order: the table below is created after the refused append's reply.
    await player.send_bytes(encode({"type": "create_table", "id": 2}))
    after = await receive(player)
    assert after["type"] == "table_created" and after["ref"] == 2  # no "rolled" before it
    assert await redis_client.llen(log) == 2  # type: ignore[misc]
    await a.close()
    await b.close()

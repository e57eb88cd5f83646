"""Keep-alives (PROTOCOL.md §1, server/net/heartbeat.py): a socket that asks for them hears
``alive`` from its node at least every 2 s while nothing else comes, one that does not never
does, and a socket pushed something every period gets none; the client library and its
silence watch ask for them and never need to ping."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import aiohttp
from aiohttp import WSMsgType
from server_helpers import StartServer, connect, guest
from test_hub_writes import _conn

from server.app import SOCKET_HEARTBEAT
from server.net.connection import Hub
from server.net.heartbeat import ALIVE, SocketHeartbeat
from server.protocol.codec import Outgoing, WireFormat
from server.tick import Tick


async def _frames(ws: aiohttp.ClientWebSocketResponse,
                  seconds: float) -> list[tuple[float, dict[str, Any]]]:
    """Every message received for ``seconds``, with its loop time."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    got: list[tuple[float, dict[str, Any]]] = []
    while (left := end - loop.time()) > 0:
        try:
            msg = await asyncio.wait_for(ws.receive(), left)
        except TimeoutError:
            break
        if msg.type is WSMsgType.TEXT:
            got.append((loop.time(), json.loads(msg.data)))
    return got


async def test_a_socket_that_asks_hears_alive_every_two_seconds_at_most(
    start_server: StartServer,
) -> None:
    server = await start_server(auth_timeout=30.0)
    token = await guest(server)
    async with aiohttp.ClientSession() as session:
        for asked in (True, False):
            query = "?keepalive=1" if asked else ""
            ws = await session.ws_connect(
                f"http://127.0.0.1:{server.port}/ws{query}", heartbeat=None,
                headers={"Authorization": f"Bearer {token}", "X-Forwarded-For": "10.1.1.1"})
            got = await _frames(ws, 5.5)
            kinds = [m["type"] for _, m in got]
            assert kinds[0] == "welcome" and got[0][1]["keepalive"] is asked, kinds
            alive = [at for at, m in got if m["type"] == "alive"]
            if asked:
                assert len(alive) >= 2, kinds
                times = [got[0][0], *alive]
                assert max(b - a for a, b in itertools.pairwise(times)) < 2.6, times
            else:
                assert alive == [], kinds
            await ws.close()


async def test_the_client_library_asks_and_needs_no_ping(start_server: StartServer) -> None:
    server = await start_server(auth_timeout=30.0)
    client = await connect(server, await guest(server), hello=True)
    assert client.welcome is not None
    assert client.messages[0]["keepalive"] is True
    sent = 0
    assert client.ws is not None
    original = client.ws.send

    async def counting(data: str | bytes) -> None:
        nonlocal sent
        sent += 1
        await original(data)

    client.ws.send = counting  # type: ignore[method-assign,assignment]
    await asyncio.sleep(5.0)  # past the silence watch's 3.3 s of quiet
    assert sent == 0  # no ping: the keep-alives were heard
    assert server.app[SOCKET_HEARTBEAT].keepalives >= 2
    assert all(m["type"] != "alive" for m in client.messages)  # not handed on
    await client.close()


def test_only_quiet_sockets_that_asked_get_one_every_second_period() -> None:
    hub = Hub(1 << 20)
    liveness = SocketHeartbeat(hub, Tick(), heartbeat=20.0)
    quiet, tquiet = _conn(hub, "quiet")
    busy, tbusy = _conn(hub, "busy")
    _deaf, tdeaf = _conn(hub, "deaf")
    quiet.keepalive = busy.keepalive = True
    event = Outgoing({"type": "moved", "v": 1})
    for _ in range(6):
        hub.push(busy, event)
        liveness.keep_alive()
    alive = ALIVE.wire(WireFormat.JSON, False)
    assert tquiet.writes.count(alive) == 3  # every second period
    assert alive not in tbusy.writes and tdeaf.writes == []
    assert liveness.keepalives == 3

"""The WebSocket heartbeat on the node's tick (server/net/heartbeat.py), over real sockets: a
silent socket is pinged and, not answering, dropped; one that answers (or keeps talking)
stays; the node answers a client's WebSocket ping and its application ``ping``."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from aiohttp import WSMsgType
from server_helpers import StartServer

from server.app import HUB, SOCKET_HEARTBEAT

HEARTBEAT = 0.4  # a sweep every 0.1 s, a ping answered within 0.2 s


async def _open(port: int, session: aiohttp.ClientSession, *,
                autoping: bool) -> aiohttp.ClientWebSocketResponse:
    return await session.ws_connect(f"http://127.0.0.1:{port}/ws", autoping=autoping,
                                    heartbeat=None)


async def test_a_silent_socket_is_pinged_then_dropped(start_server: StartServer) -> None:
    server = await start_server(heartbeat=HEARTBEAT, auth_timeout=30.0)
    async with aiohttp.ClientSession() as session:
        ws = await _open(server.port, session, autoping=False)  # reads, never answers
        started = time.monotonic()
        first = await asyncio.wait_for(ws.receive(), 5.0)
        assert first.type is WSMsgType.PING
        while True:  # nothing but pings until the node drops the socket
            msg = await asyncio.wait_for(ws.receive(), 5.0)
            if msg.type is not WSMsgType.PING:
                break
        assert msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.ERROR)
        assert time.monotonic() - started >= HEARTBEAT  # pinged after silence, not at once
    for _ in range(100):
        if not server.app[HUB].by_id:
            break
        await asyncio.sleep(0.02)
    assert not server.app[HUB].by_id  # the node let it go
    assert server.app[SOCKET_HEARTBEAT].dropped >= 1


async def test_a_socket_that_answers_pings_stays(start_server: StartServer) -> None:
    server = await start_server(heartbeat=HEARTBEAT, auth_timeout=30.0)
    liveness = server.app[SOCKET_HEARTBEAT]
    async with aiohttp.ClientSession() as session:
        ws = await _open(server.port, session, autoping=True)  # pongs every ping
        reader = asyncio.ensure_future(ws.receive())
        await asyncio.sleep(6 * HEARTBEAT)
        assert not reader.done() and not ws.closed
        assert liveness.pings >= 2 and liveness.dropped == 0
        assert len(server.app[HUB].by_id) == 1
        reader.cancel()
        await ws.close()


async def test_a_talking_socket_is_not_pinged(start_server: StartServer) -> None:
    server = await start_server(heartbeat=HEARTBEAT, auth_timeout=30.0)
    async with aiohttp.ClientSession() as session:
        ws = await _open(server.port, session, autoping=False)
        kinds: list[WSMsgType] = []
        ends = time.monotonic() + 5 * HEARTBEAT
        while time.monotonic() < ends:
            await ws.send_json({"type": "ping"})  # an application ping: answered with pong
            msg = await asyncio.wait_for(ws.receive(), 2.0)
            kinds.append(msg.type)
            if msg.type is WSMsgType.TEXT:
                assert msg.json()["type"] == "pong"
            await asyncio.sleep(HEARTBEAT / 4)
        assert kinds and set(kinds) == {WSMsgType.TEXT}  # pongs only, never a node's ping
        assert server.app[SOCKET_HEARTBEAT].pings == 0
        await ws.close()


async def test_the_node_answers_a_websocket_ping(start_server: StartServer) -> None:
    server = await start_server(auth_timeout=30.0)
    async with aiohttp.ClientSession() as session:
        ws = await _open(server.port, session, autoping=False)
        await ws.ping(b"are you there")
        msg = await asyncio.wait_for(ws.receive(), 5.0)
        assert msg.type is WSMsgType.PONG and msg.data == b"are you there"
        await ws.send_json({"type": "ping", "id": 7})  # the socket still serves messages
        msg = await asyncio.wait_for(ws.receive(), 5.0)
        assert msg.json() == {"type": "pong", "ref": 7}
        await ws.close()

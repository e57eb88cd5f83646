"""The client library's silence watch against fake nodes: a node that answers ``ping`` keeps
the socket (its ``pong`` is not handed on); one that goes silent with the socket open is
given up after ``silence_timeout`` and the client moves to the next URL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from test_client_library import FakeNode

from server.client import Client

SILENCE = 0.6


async def messages(ws: web.WebSocketResponse, inbox: asyncio.Queue[Any]
                   ) -> AsyncIterator[dict[str, Any]]:
    """What the client sends, until its socket closes."""
    while not ws.closed:
        try:
            yield await asyncio.wait_for(inbox.get(), 0.05)
        except TimeoutError:
            continue


async def test_a_node_that_answers_pings_keeps_the_socket() -> None:
    pings: list[dict[str, Any]] = []

    async def script(ws: web.WebSocketResponse, inbox: asyncio.Queue[Any]) -> None:
        async for message in messages(ws, inbox):
            if message.get("type") == "ping":
                pings.append(message)
                await ws.send_json({"type": "pong"})

    async with FakeNode(script) as node:
        client = await Client.connect(node.url, "t", silence_timeout=SILENCE)
        assert (await client.next_event(timeout=1.0)).type == "welcome"
        with pytest.raises(TimeoutError):
            await client.next_event(timeout=4 * SILENCE)  # the pongs are not handed on
        assert len(pings) >= 2
        assert client.connected and client.silences == 0 and client.reconnects == 0
        await client.close()


async def test_a_silent_node_is_left_for_the_next_url() -> None:
    pings: list[int] = []

    async def silent(ws: web.WebSocketResponse, inbox: asyncio.Queue[Any]) -> None:
        async for message in messages(ws, inbox):  # answers nothing (a paused node)
            if message.get("type") == "ping":
                pings.append(1)

    async def answers(ws: web.WebSocketResponse, inbox: asyncio.Queue[Any]) -> None:
        async for message in messages(ws, inbox):
            if message.get("type") == "ping":
                await ws.send_json({"type": "pong"})

    async with FakeNode(silent) as first, FakeNode(answers) as second:
        client = await Client.connect(first.url, "t", urls=[second.url],
                                      silence_timeout=SILENCE)
        for _ in range(250):
            if client.reconnects:
                break
            await asyncio.sleep(0.02)
        await client.wait_connected(5.0)
        assert pings, "no ping before giving the socket up"
        assert client.url == second.url and client.silences == 1 and client.reconnects == 1
        await client.close()

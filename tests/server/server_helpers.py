"""Helpers for the match server tests: a real server on loopback, real Redis, real clients.

``start_server(**settings)`` starts ``create_app`` on 127.0.0.1 (port 0) with the test's
key prefix, so every Redis key it writes is deleted after the test. Clients are
``websockets`` connections wrapped in :class:`Client`, which decodes JSON text frames and
msgpack binary frames and lets a test wait for a message by type. The sockets, codecs and
HTTP calls are the client library's (``server.client``).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from server.app import HUB, LOBBY
from server.client import Client as LibraryClient
from server.client import Format, guest_token
from server.client import default_decision as library_default_decision
from server.client import register as library_register
from server.config import Settings
from server.lobby.lobby import Lobby
from server.net.connection import Hub
from server.rules import DiceSource, ScriptedDice

TIMEOUT = 10.0
TEST_PROTOCOL = int(os.environ.get("TABLE42_TEST_PROTOCOL", "2"))
"""The table-event form of the tests' clients (PROTOCOL.md §5.1): 2, change-only (the
library keeps and attaches the full state of every event), or 1 (TABLE42_TEST_PROTOCOL=1)."""
_addresses = itertools.count(1)


def scripted(seed: int, count: int = 4000) -> Callable[[], DiceSource]:
    """A dice factory whose tables all roll the same long scripted sequence."""
    rng = random.Random(seed)
    values = [rng.randint(1, 6) for _ in range(count)]
    return lambda: ScriptedDice(values)


def fixed(values: list[int]) -> Callable[[], DiceSource]:
    return lambda: ScriptedDice(values)


@dataclass
class RunningServer:
    app: web.Application
    runner: web.AppRunner
    port: int
    settings: Settings

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def lobby(self) -> Lobby:
        return self.app[LOBBY]

    @property
    def hub(self) -> Hub:
        """The node's sockets (``server/net``)."""
        return self.app[HUB]

    async def stop(self) -> None:
        await self.runner.cleanup()


class Client(LibraryClient):
    """One WebSocket client: the client library's (``server.client.Client``), keeping every
    message received in ``messages``, in order, with a read cursor for tests: ``next`` and
    ``expect`` walk through them, ``request`` waits for the answer to a fresh ``id``."""

    def __init__(self, url: str, *, token: str | None, binary: bool,
                 headers: dict[str, str], hello: bool, pace: bool = True) -> None:
        super().__init__(
            url, token=token, fmt=Format.MSGPACK if binary else Format.JSON, headers=headers,
            hello=hello, auto_reconnect=False, keep_messages=True, queue_events=False,
            request_timeout=TIMEOUT, protocol=TEST_PROTOCOL, pace=pace,
        )
        self.binary = binary
        self._read = 0
        self._next_id = 0

    def _decode(self, frame: bytes | str) -> dict[str, Any]:
        """The server answers in the client's format: binary (msgpack) frames to a msgpack
        client, text (JSON) frames to a JSON client."""
        if isinstance(frame, bytes):
            assert self.binary, "binary frame on a JSON client"
        else:
            assert not self.binary, "text frame on a msgpack client"
        return super()._decode(frame)

    def start(self) -> None:
        """Kept for older tests: the library starts its reader when it connects."""

    async def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next message not yet returned by ``next``/``expect``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._read >= len(self.messages):
            if self.is_closed:
                raise ConnectionError(f"socket closed ({self.close_code})")
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), max(0.001, deadline - loop.time()))
        message = self.messages[self._read]
        self._read += 1
        return message

    async def expect(
        self, kind: str, timeout: float = TIMEOUT, **match: Any
    ) -> dict[str, Any]:
        """Skip ahead to the next message of type ``kind`` (with the given field values)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            message = await self.next(max(0.001, deadline - loop.time()))
            if message.get("type") == kind and all(message.get(k) == v for k, v in match.items()):
                return message

    async def request(
        self, message: Mapping[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send with a fresh ``id`` and return the reply or error carrying it as ``ref``
        (errors are returned, not raised; the cursor moves past the reply)."""
        self._next_id += 1
        ref = self._next_id
        await self.send({**message, "id": ref})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or TIMEOUT)
        while True:
            answer = await self.next(max(0.001, deadline - loop.time()))
            if answer.get("ref") == ref:
                return answer

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == kind]


class Reachable(Protocol):
    """A server the helpers below can reach: an in-process :class:`RunningServer` or a
    ``python -m server`` process (``hardening_helpers.ServerProcess``)."""

    @property
    def ws_url(self) -> str: ...


async def register(server: Reachable, name: str, password: str = "correct horse") -> str:
    return await library_register(server.ws_url, name, password)


async def guest(server: Reachable) -> str:
    return await guest_token(server.ws_url)


async def connect(
    server: Reachable,
    token: str | None,
    *,
    binary: bool = False,
    address: str | None = None,
    hello: bool = False,
    welcome: bool = True,
    pace: bool = True,
) -> Client:
    """Open a socket (bearer header, or a ``hello`` message when ``hello``) from ``address``
    (sent as X-Forwarded-For; the test server trusts 127.0.0.1). The client keeps the
    server's message rate (the library's pacing) unless ``pace`` is off: only a test of
    that limit sends faster."""
    n = next(_addresses)
    headers = {"X-Forwarded-For": address or f"10.{n // 250 % 250}.{n % 250}.7"}
    client = Client(server.ws_url, token=token, binary=binary, headers=headers, hello=hello,
                    pace=pace)
    await client._open(wait_welcome=False)
    if token is not None and welcome:
        message = await client.expect("welcome")
        client.player = message["player"]
    return client


async def seat_two(
    server: Reachable,
    a: Client,
    b: Client,
    *,
    mode: str = "competitive",
    match_length: int = 0,
    **extra: Any,
) -> tuple[str, dict[str, Any]]:
    """``a`` creates a table, ``b`` joins; returns the table id and ``a``'s game_start."""
    created = await a.request({"type": "create_table", "mode": mode,
                               "match_length": match_length, **extra})
    assert created["type"] == "table_created", created
    table = created["table"]
    await b.send({"type": "join", "table": table})
    start = await a.expect("game_start", table=table)
    await b.expect("game_start", table=table)
    return table, start


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout: float = TIMEOUT
                     ) -> None:
    """Wait until ``check()`` holds (for state that no message announces, such as the lobby
    index a node updates in the background); fails after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.02)


def latest_state(client: Client, table: str) -> dict[str, Any] | None:
    for message in reversed(client.messages):
        if message.get("table") == table and isinstance(message.get("state"), dict):
            return dict(message["state"])
    return None


async def play_out(
    clients: dict[int, Client],
    table: str,
    *,
    decide: Callable[[int, dict[str, Any]], dict[str, Any] | None] | None = None,
    until: str = "game_over",
    stop: Callable[[dict[str, Any]], bool] | None = None,
    max_steps: int = 3000,
) -> dict[str, Any]:
    """Drive both sides until ``until`` arrives: roll, take, and play the first legal play
    (``decide(side, state)`` may return another action). Returns the ``until`` event as
    side 0 saw it."""
    watcher = clients[0]
    first = watcher._read
    acted = -1
    for _ in range(max_steps):
        for message in watcher.messages[first:]:
            if message.get("table") != table:
                continue
            if message.get("type") == until or (stop is not None and stop(message)):
                return message
        for client in clients.values():
            errors = client.of_type("error")
            if errors:
                raise AssertionError(f"error during play: {errors}")
        latest = _latest(watcher, table)
        if latest is not None and latest["v"] != acted:
            state = latest["state"]
            game = state.get("game")
            if game and game["to_act"] is not None and state["status"] == "playing":
                acted = latest["v"]
                side = game["to_act"]
                action = decide(side, state) if decide is not None else None
                if action is None:
                    action = default_decision(game)
                if action:
                    await clients[side].send({**action, "table": table})
        await watcher.next()
    raise AssertionError(f"no {until} after {max_steps} messages")


def resign_at_once(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
    """A ``decide`` for :func:`play_out`: side 1 resigns a single game at its first
    decision, side 0 accepts (the quickest game to finish)."""
    phase = state["game"]["phase"]
    if phase == "resign_offered":
        return {"type": "accept_resign"}
    if side == 1 and phase in ("roll", "move"):
        return {"type": "resign", "kind": "single"}
    return None


def _latest(client: Client, table: str) -> dict[str, Any] | None:
    """The newest versioned event of ``table`` that carries a state."""
    for message in reversed(client.messages):
        if message.get("table") == table and "v" in message:
            return message if isinstance(message.get("state"), dict) else None
    return None


def default_decision(game: dict[str, Any]) -> dict[str, Any]:
    try:
        return library_default_decision(game)
    except ValueError as exc:
        raise AssertionError(str(exc)) from None


StartServer = Callable[..., Awaitable[RunningServer]]

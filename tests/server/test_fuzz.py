"""Random frames at a live connection: the socket stays usable and the server stays up.

The server runs on its own event loop in a thread so hypothesis can drive a plain
synchronous ``websockets`` client, one example after another, on the same socket. The server
keeps its default message rate, and the client keeps it too (the client library's budget,
``server.client.pacing``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, Literal, cast

import msgpack
import pytest
import redis
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from server.app import create_app
from server.client.pacing import SendPace
from server.config import Settings

TYPES = ["hello", "auth", "ping", "list_tables", "create_table", "join", "leave", "watch",
         "unwatch", "roll", "play", "double", "take", "drop", "resign", "accept_resign",
         "reject_resign", "sync", "fly", ""]
FIELDS = ["type", "id", "table", "play", "since", "mode", "kind", "match_length",
          "tournament_id", "token"]

# Annotated: mypy infers a bare ("Cs",) argument as tuple[str], not the category literal.
NO_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
text = st.text(alphabet=st.characters(exclude_categories=NO_SURROGATES), max_size=40)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64), st.floats(allow_nan=False),
    text, st.text(max_size=10), st.binary(max_size=20), st.sampled_from(TYPES),
    st.sampled_from(["competitive", "boosted", "private", "tournament", "24/18 13/8"]),
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=8), inner, max_size=4), max_leaves=12,
)
messages = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES)},
    optional={name: values for name in FIELDS[1:]},
)


def as_frame(obj: Any, binary: bool) -> bytes | str:
    if binary:
        try:
            return bytes(msgpack.packb(obj))
        except (UnicodeEncodeError, OverflowError):  # not representable in msgpack
            return b"\xc1"
    # ensure_ascii keeps lone surrogates as \udXXX escapes: valid frames, odd strings.
    return json.dumps(obj, default=lambda b: b.hex())


frames = st.one_of(
    st.binary(max_size=300),
    st.text(alphabet=st.characters(exclude_categories=NO_SURROGATES), max_size=200),
    st.tuples(messages, st.booleans()).map(lambda mb: as_frame(*mb)),
    st.tuples(values, st.booleans()).map(lambda vb: as_frame(*vb)),
)


class ThreadedServer:
    def __init__(self, settings: Settings) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner, self.port = self._call(self._start(settings))

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(15)

    async def _start(self, settings: Settings) -> tuple[web.AppRunner, int]:
        runner = web.AppRunner(create_app(settings), shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        # aiohttp types it as AbstractServer; loop.create_server made an asyncio.Server.
        return runner, cast(asyncio.Server, server).sockets[0].getsockname()[1]

    def guest_token(self) -> str:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/guest", method="POST")
        with urllib.request.urlopen(request, timeout=5) as resp:
            return str(json.load(resp)["token"])

    def socket(self) -> ClientConnection:
        return connect(
            f"ws://127.0.0.1:{self.port}/ws",
            legacy=True,
            additional_headers={"Authorization": f"Bearer {self.guest_token()}"},
            max_size=None,
        )

    def stop(self) -> None:
        self._call(self.runner.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def fuzz_server(
    make_settings: Callable[..., Settings], redis_url: str, key_prefix: str
) -> Iterator[ThreadedServer]:
    server = ThreadedServer(make_settings(max_msg_size=4096))
    try:
        yield server
    finally:
        server.stop()
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(match=f"{key_prefix}*", count=1000))
        if keys:
            client.unlink(*keys)
        client.close()  # type: ignore[no-untyped-call]  # redis-py leaves close() unannotated


def decode(raw: bytes | str) -> dict[str, Any]:
    return dict(msgpack.unpackb(raw) if isinstance(raw, bytes) else json.loads(raw))


class Paced:
    """A synchronous socket that keeps the server's message rate (``welcome.limits``)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.pace = SendPace(time.monotonic())
        welcome = decode(ws.recv(timeout=5))
        assert welcome["type"] == "welcome", welcome
        self.pace.configure(welcome["limits"])

    def send(self, frame: bytes | str) -> None:
        while (wait := self.pace.take(time.monotonic())) > 0:
            time.sleep(wait)
        self.ws.send(frame)

    def recv(self, timeout: float) -> bytes | str:
        return self.ws.recv(timeout=timeout)

    def close(self) -> None:
        self.ws.close()


def ping(ws: Paced, ref: int, seen: list[dict[str, Any]]) -> None:
    ws.send(json.dumps({"type": "ping", "id": ref}))
    while True:
        message = decode(ws.recv(timeout=5))
        seen.append(message)
        if message.get("type") == "pong" and message.get("ref") == ref:
            return


@pytest.mark.parametrize("shard", range(3))
def test_random_frames_never_break_the_connection(fuzz_server: ThreadedServer,
                                                  shard: int) -> None:
    """250 batches of random frames in all, in three shards of their own sockets (each
    paced at the default message rate), so they run side by side."""
    ws = Paced(fuzz_server.socket())  # (it reads the welcome)
    surrogate = '{"type": "play", "table": "t", "play": "\\ud800"}'
    ws.send(surrogate)
    refused = decode(ws.recv(timeout=5))  # a lone surrogate is not text
    assert refused["code"] == "bad_field" and refused["field"] == "play", refused
    seen: list[dict[str, Any]] = []
    counter = iter(range(10**9))

    @settings(max_examples=84, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(batch=st.lists(frames, min_size=1, max_size=4))
    def throw(batch: list[bytes | str]) -> None:
        for frame in batch:
            ws.send(frame)
        ping(ws, next(counter), seen)

    throw()
    codes = {m.get("code") for m in seen if m.get("type") == "error"}
    assert "internal_error" not in codes
    assert "rate_limited" not in codes  # the client kept the rate
    assert {"bad_frame", "bad_message"} <= codes
    ws.close()
    # The server is alive and serves a fresh socket.
    fresh = Paced(fuzz_server.socket())
    ping(fresh, 1, [])
    fresh.close()

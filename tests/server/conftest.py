"""Fixtures for the match server: a real server on loopback, real Redis, real clients.

``start_server(**settings)`` starts ``create_app`` on 127.0.0.1 (port 0) with the test's key
prefix, so every Redis key it writes is deleted after the test; helpers (clients, playing a
game out) are in ``server_helpers.py``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio
import redis.asyncio as aioredis
import server_helpers
from aiohttp import web
from event_forms import FullFormShadow
from hardening_helpers import PrivateRedis
from server_helpers import RunningServer, StartServer

from server.app import create_app
from server.config import Settings
from server.rules import DiceSource
from tests.conftest import prefixed_redis

BOTH_FORMS = frozenset({
    "test_games.py",
    "test_nodes_and_shutdown.py",
    "test_hardening_outage.py",
    "test_hardening_ratings.py",
    "test_client_library.py",
    "test_lobby.py",
    "test_matchmaking_live.py",
})
"""The modules that play games, sync, resume and reconnect: each of their checks holds in
both table-event forms (PROTOCOL.md §5.1), protocol 2 (lean) and protocol 1 (full). The other
modules do not depend on the event form (HTTP, bad input, pure code) or test both forms
themselves (``test_lean_events.py``). With ``TABLE42_TEST_PROTOCOL=1`` every test runs once,
in the full form, over sockets."""

SOCKET_FORMS = ("sync", "resume", "reconnect", "gap", "restart", "node", "sigterm")
"""A test of those modules whose name has one of these words runs over sockets in both forms,
``[lean]`` and ``[full]``: the answers that exist in one form per socket (``sync``,
``resume``, a takeover's) are built for its form, and a server process is out of reach
below the socket. The others run once, ``[lean+full]``: lean clients, and every event their
sockets are written checked in the full form below the socket (``event_forms``), so a
full-form client would have received the very states the test checked."""


LEAN_AND_FULL = 0
"""``event_form``'s parameter for lean clients with the full form checked below the socket."""


def _both_forms(metafunc: pytest.Metafunc) -> bool:
    return (Path(str(metafunc.definition.fspath)).name in BOTH_FORMS
            and server_helpers.TEST_PROTOCOL == 2)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not _both_forms(metafunc):
        return
    if any(word in metafunc.definition.name for word in SOCKET_FORMS):
        metafunc.parametrize("event_form", [2, 1], ids=["lean", "full"], indirect=True)
    else:
        metafunc.parametrize("event_form", [LEAN_AND_FULL], ids=["lean+full"], indirect=True)


@pytest.fixture(autouse=True)
def event_form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The table-event form of this test's clients (``server_helpers.TEST_PROTOCOL``); in a
    ``[lean+full]`` test the full form is checked below the socket."""
    param = int(getattr(request, "param", server_helpers.TEST_PROTOCOL))
    form = 2 if param == LEAN_AND_FULL else param
    monkeypatch.setattr(server_helpers, "TEST_PROTOCOL", form)
    if param != LEAN_AND_FULL:
        yield form
        return
    shadow = FullFormShadow()
    shadow.install(monkeypatch)
    yield form
    shadow.check()


@pytest.fixture
async def private_redis() -> AsyncIterator[PrivateRedis]:
    """A redis-server of the test's own (never the shared one), that it may stop, pause,
    kill and start again (``hardening_helpers.PrivateRedis``)."""
    redis = PrivateRedis().start()
    try:
        yield redis
    finally:
        redis.close()


def settings_for(redis_url: str, key_prefix: str, /, **overrides: Any) -> Settings:
    """A test server's settings: loopback, port 0, the test's Redis and key prefix (which
    ``overrides`` may replace too)."""
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 0,
        "redis_url": redis_url,
        "key_prefix": key_prefix,
        "trusted_proxies": ("127.0.0.1",),
        "scrypt_n": 2,
        "scrypt_r": 1,
        "decision_time": 30.0,
        "grace_period": 30.0,
        "heartbeat": 5.0,
        "shutdown_timeout": 5.0,
        "finished_linger": 5.0,
        # The message rate is the server's default (30/s, bursts of 60): the tests'
        # clients keep it (the library paces them); a test of that limit sets its own.
        # The per-address hardening limits (every loopback test client is one address);
        # tests/server/test_hardening*.py turn them on.
        "limits": False,
        # The in-process server shares its process and loop with the test's clients: its
        # load is theirs too. test_overload.py judges a real server process's load.
        "load_max_lag": 0.0,
        "load_max_cpu": 0.0,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def make_settings(redis_url: str, key_prefix: str) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        return settings_for(redis_url, key_prefix, **overrides)

    return make


async def serve(settings: Settings,
                dice_factory: Callable[[], DiceSource] | None = None) -> RunningServer:
    """``create_app(settings)`` listening on a free loopback port."""
    app = create_app(settings, dice_factory=dice_factory)
    runner = web.AppRunner(app, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    # aiohttp types it as AbstractServer; loop.create_server made an asyncio.Server.
    sockets = cast(asyncio.Server, site._server).sockets if site._server is not None else []
    port = sockets[0].getsockname()[1]
    return RunningServer(app, runner, port, settings)


@pytest.fixture
async def start_server(
    make_settings: Callable[..., Settings], redis_client: aioredis.Redis
) -> AsyncIterator[StartServer]:
    """Start servers; all are stopped after the test (before the key cleanup)."""
    running: list[RunningServer] = []

    async def start(
        dice_factory: Callable[[], DiceSource] | None = None, **overrides: Any
    ) -> RunningServer:
        srv = await serve(make_settings(**overrides), dice_factory)
        running.append(srv)
        return srv

    try:
        yield start
    finally:
        for srv in running:
            await srv.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_server(
    request: pytest.FixtureRequest, redis_url: str
) -> AsyncIterator[RunningServer]:
    """One server for a module whose tests only read (or whose writes never meet): its
    settings are the module's ``MODULE_SERVER`` (overrides of :func:`settings_for`), its
    keys under a prefix of the module's own, deleted afterwards. The module's tests run in
    the module's event loop (``pytestmark = pytest.mark.asyncio(loop_scope="module")``)."""
    prefix = f"test-{uuid.uuid4().hex[:12]}:"
    overrides: dict[str, Any] = getattr(request.module, "MODULE_SERVER", {})
    async with prefixed_redis(redis_url, prefix):
        srv = await serve(settings_for(redis_url, prefix, **overrides))
        try:
            yield srv
        finally:
            await srv.stop()


FAST_LEASES = {"lease_ttl": 0.6, "lease_renew": 0.2, "takeover_scan": 0.1}
"""Lease timings short enough for a test (production: 6 s, 2 s, 1 s; docs/operations.md)."""


@pytest.fixture
def start_nodes(start_server: StartServer) -> Callable[..., Any]:
    """``await start_nodes(n, **settings)``: ``n`` nodes ``n1``..``nn`` on the test's one
    Redis prefix, with short leases (a node lost is taken over in about a second)."""

    async def start(count: int = 2, **overrides: Any) -> list[RunningServer]:
        settings = {**FAST_LEASES, **overrides}
        return [await start_server(node_id=f"n{i}", **settings) for i in range(1, count + 1)]

    return start

"""Fixtures for the browser client's tests: a real server on loopback (real Redis, scripted
dice), Debian's Chromium driven by Playwright's Python package, one browser context per player.

Chromium: ``/usr/bin/chromium`` (or ``TABLE42_CHROMIUM``); Playwright's own browser download
is never used. When it cannot start, the tests FAIL under ``CI=true`` and are skipped on a
developer's machine with a message saying how to install it.

One Chromium per worker process (session): every test of this folder runs in that session's
event loop (``pytest_collection_modifyitems``, the async fixtures here with
``loop_scope="session"``), gets the browser through ``browser``, and each browser context a
test opened is closed after it, so tests share nothing but the browser process.

Every page records its console errors and uncaught exceptions (``Player.errors``) and every
WebSocket frame it receives (``Player.frames``, decoded JSON), so a test can compare what the
page shows with what the server pushed.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from aiohttp import web

from server.app import create_app
from server.config import Settings
from server.rules import DiceSource
from tests.conftest import prefixed_redis

CHROMIUM = os.environ.get("TABLE42_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
INSTALL_HINT = (
    "Chromium is needed for the browser tests: apt-get install -y chromium "
    "(and pip install -e '.[test]' for Playwright's Python package; never `playwright install`)"
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TIMEOUT_MS = 15_000


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the browser cannot start under CI: {reason}. {INSTALL_HINT}", pytrace=False)
    pytest.skip(f"{reason}. {INSTALL_HINT}")


@dataclass
class BrowserServer:
    app: web.Application
    runner: web.AppRunner
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The async tests of this folder run in the session's event loop (the browser's)."""
    session_loop = pytest.mark.asyncio(loop_scope="session")
    for item in items:
        if Path(str(item.fspath)).resolve().parent == HERE and pytest_asyncio.is_async_test(item):
            item.add_marker(session_loop, append=False)


@pytest_asyncio.fixture(loop_scope="session")
async def redis_client(redis_url: str, key_prefix: str) -> AsyncIterator[aioredis.Redis]:
    """The suite's ``redis_client``, in the session's event loop."""
    async with prefixed_redis(redis_url, key_prefix) as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def start_browser_server(
    redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> AsyncIterator[Callable[..., Awaitable[BrowserServer]]]:
    """Start servers (trusting 127.0.0.1 as a proxy, so each browser context's
    X-Forwarded-For is its address); all are stopped after the test."""
    running: list[BrowserServer] = []

    async def start(
        dice_factory: Callable[[], DiceSource] | None = None, **overrides: Any
    ) -> BrowserServer:
        values: dict[str, Any] = {
            "host": "127.0.0.1", "port": 0, "redis_url": redis_url, "key_prefix": key_prefix,
            "trusted_proxies": ("127.0.0.1",), "scrypt_n": 2, "scrypt_r": 1,
            "decision_time": 60.0, "grace_period": 60.0,
            "heartbeat": 5.0, "shutdown_timeout": 5.0, "finished_linger": 30.0,
            "matchmaking_pass_interval": 0.1, "matchmaking_hold": 0.05,
            # The in-process server shares its process with the test's driver: its load is
            # theirs too (the door is tested on a server process: test_overload.py).
            "load_max_lag": 0.0, "load_max_cpu": 0.0,
        }
        values.update(overrides)
        app = create_app(Settings(**values), dice_factory=dice_factory)
        runner = web.AppRunner(app, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        sockets = cast(asyncio.Server, site._server).sockets if site._server is not None else []
        server = BrowserServer(app, runner, sockets[0].getsockname()[1])
        running.append(server)
        return server

    try:
        yield start
    finally:
        for server in running:
            await server.runner.cleanup()


@dataclass
class Player:
    """One person: a browser context (its own storage and address) and its page."""

    page: Any
    address: str
    errors: list[str] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("type") == kind]

    def attach(self, page: Any) -> None:
        """Record ``page``'s console errors, uncaught exceptions and received frames."""
        self.page = page

        def on_console(message: Any) -> None:
            if message.type == "error":
                self.errors.append(f"console: {message.text}")

        def on_frame(payload: str | bytes) -> None:
            if isinstance(payload, str):
                self.frames.append(json.loads(payload))

        page.on("console", on_console)
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.on("websocket", lambda ws: ws.on("framereceived", on_frame))

    async def reopen(self, url: str) -> None:
        """Close the page (its socket drops) and open ``url`` in a new page of the same
        context (same storage: the token survives)."""
        context = self.page.context
        await self.page.close()
        page = await context.new_page()
        self.attach(page)
        await page.goto(url)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def shared_browser() -> AsyncIterator[Any]:
    """This worker's Chromium, started once."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        _unavailable("Playwright's Python package is not installed")
        raise
    if not Path(CHROMIUM).exists():
        _unavailable(f"no Chromium at {CHROMIUM}")
    manager = async_playwright()
    pw = await manager.start()
    try:
        try:
            launched = await pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, timeout=60_000
            )
        except Exception as exc:  # any launch failure: missing libraries, sandbox, ...
            _unavailable(f"Chromium did not start ({str(exc).splitlines()[0]})")
            raise
        try:
            yield launched
        finally:
            await launched.close()
    finally:
        await manager.__aexit__(None, None, None)


@pytest_asyncio.fixture(loop_scope="session")
async def browser(shared_browser: Any) -> AsyncIterator[Any]:
    """The worker's Chromium; every browser context the test opened is closed after it."""
    try:
        yield shared_browser
    finally:
        for context in list(shared_browser.contexts):
            await context.close()


_addresses = iter(range(1, 250))


@pytest.fixture
def new_player(browser: Any) -> Callable[..., Awaitable[Player]]:
    """A new browser context with its own X-Forwarded-For address (or ``address``), its
    page opened at ``url`` (phone-sized when ``phone``)."""

    async def make(url: str, *, phone: bool = False, address: str | None = None) -> Player:
        address = address or f"10.77.{next(_addresses)}.9"
        viewport = {"width": 390, "height": 844} if phone else {"width": 1100, "height": 900}
        context = await browser.new_context(
            extra_http_headers={"X-Forwarded-For": address}, viewport=viewport
        )
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        player = Player(page, address)
        player.attach(page)
        await page.goto(url)
        return player

    return make


@pytest.fixture
def artifacts() -> Path:
    """Where tests save screenshots: test-artifacts/ at the repository root (gitignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS

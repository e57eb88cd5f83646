"""The server serves the browser client itself: ``/`` and ``/static/...`` (no browser needed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

StartServer = Callable[..., Awaitable[Any]]


async def test_the_client_is_served_at_the_root(start_browser_server: StartServer) -> None:
    server = await start_browser_server()
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url + "/") as resp:
            assert resp.status == 200
            assert resp.content_type == "text/html"
            assert resp.headers["Cache-Control"] == "no-cache"
            html = await resp.text()
        assert '<script type="module" src="/static/js/main.js">' in html
        for path in ("/static/js/main.js", "/static/js/moves.js", "/static/app.css"):
            async with http.get(server.url + path) as resp:
                assert resp.status == 200, path
                assert resp.headers["Cache-Control"] == "no-cache"
                expected = "text/css" if path.endswith(".css") else "javascript"
                assert expected in resp.content_type, (path, resp.content_type)


@pytest.mark.parametrize("path", [
    "/static/", "/static/js/", "/static/nothing.js", "/static/../app.py",
    "/static/%2e%2e/app.py", "/static/js/%2e%2e/%2e%2e/app.py",
])
async def test_no_listing_and_nothing_outside_the_folder(
    start_browser_server: StartServer, path: str
) -> None:
    server = await start_browser_server()
    async with aiohttp.ClientSession() as http, http.get(server.url + path) as resp:
        assert resp.status in (403, 404), (path, resp.status)
        assert "create_app" not in await resp.text()

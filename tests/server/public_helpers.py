"""Helpers for the public HTTP API tests: plain GET/POST over a real aiohttp client."""

from __future__ import annotations

from typing import Any

import aiohttp
from server_helpers import RunningServer


async def get(server: RunningServer, path: str, **kw: Any) -> tuple[int, Any]:
    """``GET path``: the status and the decoded JSON body (None when there is none)."""
    async with aiohttp.ClientSession() as http, http.get(server.http + path, **kw) as resp:
        body = await resp.json() if resp.content_type == "application/json" else None
        return resp.status, body


async def request(
    server: RunningServer, method: str, path: str, **kw: Any
) -> tuple[int, Any, dict[str, str]]:
    """Any request: the status, the JSON body (or None) and the response headers."""
    async with aiohttp.ClientSession() as http, http.request(
        method, server.http + path, **kw
    ) as resp:
        body = await resp.json() if resp.content_type == "application/json" else None
        return resp.status, body, dict(resp.headers)

"""The client library's errors and its account calls over HTTP (guest, register, log in).

Re-exported by :mod:`server.client.connection` and :mod:`server.client`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from server.client.wire import ServerError


class ClientError(Exception):
    """Base of the client's errors."""


class RequestFailed(ClientError):
    """The server answered a request with ``error``; ``error`` is the typed event."""

    def __init__(self, error: ServerError) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.error = error
        self.code = error.code


class RequestTimeout(ClientError, TimeoutError):
    """No answer carrying the request's ``ref`` came in time."""


class ConnectionLost(ClientError, ConnectionError):
    """The socket closed (and was not, or could not be, reopened)."""


def http_base(ws_url: str) -> str:
    """``http(s)://host:port`` of a ``ws(s)://host:port/ws`` URL."""
    parts = urlsplit(ws_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "", "", ""))


async def post_json(url: str, body: Mapping[str, Any] | None = None,
                    token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http, http.post(url, json=body,
                                                          headers=headers) as resp:
        data = await resp.json() if resp.content_type == "application/json" else {}
        return resp.status, dict(data)


async def guest_token(ws_url: str) -> str:
    """A fresh guest token (``POST /api/guest``) from the server of ``ws_url``."""
    status, body = await post_json(http_base(ws_url) + "/api/guest")
    if status != 200:
        raise ClientError(f"/api/guest: {status} {body}")
    return str(body["token"])


async def register(ws_url: str, name: str, password: str) -> str:
    """Create an account (``POST /api/register``) and return its token."""
    status, body = await post_json(http_base(ws_url) + "/api/register",
                                   {"name": name, "password": password})
    if status != 201:
        raise ClientError(f"/api/register: {status} {body}")
    return str(body["token"])


async def login(ws_url: str, name: str, password: str) -> str:
    status, body = await post_json(http_base(ws_url) + "/api/login",
                                   {"name": name, "password": password})
    if status != 200:
        raise ClientError(f"/api/login: {status} {body}")
    return str(body["token"])

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


async def _token(ws_url: str, path: str, ok: int, body: dict[str, Any] | None = None) -> str:
    """The ``token`` of a POST to ``path`` answered ``ok``; :class:`ClientError` otherwise."""
    status, reply = await post_json(http_base(ws_url) + path, body)
    if status != ok:
        raise ClientError(f"{path}: {status} {reply}")
    return str(reply["token"])


async def guest_token(ws_url: str) -> str:
    """A fresh guest token (``POST /api/guest``) from the server of ``ws_url``."""
    return await _token(ws_url, "/api/guest", 200)


async def register(ws_url: str, name: str, password: str) -> str:
    """Create an account (``POST /api/register``) and return its token."""
    return await _token(ws_url, "/api/register", 201, {"name": name, "password": password})


async def login(ws_url: str, name: str, password: str) -> str:
    """Log in (``POST /api/login``) and return the token."""
    return await _token(ws_url, "/api/login", 200, {"name": name, "password": password})

"""The client library's errors and its account calls over HTTP (guest, register, log in).

Re-exported by :mod:`server.client.connection` and :mod:`server.client`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from server.client.wire import ServerError


class ClientError(Exception):
    """Base of the client's errors."""


class Refused(ClientError):
    """The server refused to open the socket (``status``: its HTTP status; 401: the bearer
    token is unknown or expired)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


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


HTTP_RETRIES = 3
"""Times a token call refused 429 is sent again, after its ``Retry-After``."""
HTTP_RETRY_WAIT_MAX = 10.0
"""A 429 asking to wait longer than this (s) is not waited out: the call fails."""


async def post_json(url: str, body: Mapping[str, Any] | None = None,
                    token: str | None = None) -> tuple[int, dict[str, Any]]:
    status, data, _wait = await _post(url, body, token)
    return status, data


async def _post(url: str, body: Mapping[str, Any] | None,
                token: str | None) -> tuple[int, dict[str, Any], float | None]:
    """Status, JSON body and, for a 429, the ``Retry-After`` seconds (1 when unreadable)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http, http.post(url, json=body,
                                                          headers=headers) as resp:
        data = await resp.json() if resp.content_type == "application/json" else {}
        wait = None
        if resp.status == 429:
            try:
                wait = max(0.0, float(resp.headers.get("Retry-After", "1")))
            except ValueError:
                wait = 1.0
        return resp.status, dict(data), wait


async def _token(ws_url: str, path: str, ok: int, body: dict[str, Any] | None = None) -> str:
    """The ``token`` of a POST to ``path`` answered ``ok``; :class:`ClientError` otherwise.
    A 429 (the address's rate, PROTOCOL.md §13) is waited out and the call made again, at
    most :data:`HTTP_RETRIES` times, when its ``Retry-After`` is short."""
    for attempt in range(HTTP_RETRIES + 1):
        status, reply, wait = await _post(http_base(ws_url) + path, body, None)
        if wait is None or wait > HTTP_RETRY_WAIT_MAX or attempt == HTTP_RETRIES:
            break
        await asyncio.sleep(wait)
    if status != ok:
        raise ClientError(f"{path}: {status} {reply}")
    return str(reply["token"])


async def guest_token(ws_url: str) -> str:
    """A fresh guest token (``POST /api/guest``) from the server of ``ws_url``."""
    return await _token(ws_url, "/api/guest", 200)


async def bot_token(ws_url: str, level: str) -> str:
    """A fresh computer player's token (``POST /api/bot``, marked ``bot: true``)."""
    return await _token(ws_url, "/api/bot", 200, {"level": level})


async def register(ws_url: str, name: str, password: str) -> str:
    """Create an account (``POST /api/register``) and return its token."""
    return await _token(ws_url, "/api/register", 201, {"name": name, "password": password})


async def login(ws_url: str, name: str, password: str) -> str:
    """Log in (``POST /api/login``) and return the token."""
    return await _token(ws_url, "/api/login", 200, {"name": name, "password": password})

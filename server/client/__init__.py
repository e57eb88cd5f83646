"""The Python client library for the Table42 protocol (PROTOCOL.md), used by the bots, the
tests and the benchmarks. See docs/client.md.

    from server.client import Client

    client = await Client.connect("ws://127.0.0.1:8080/ws", guest=True, fmt="msgpack")
    table = await client.create_table("private")
    event = await client.wait_for("game_start", table=table)

Modules: ``wire`` (pure: frames, typed events, the game snapshot) and ``connection`` (the
asyncio client, HTTP helpers for guests and accounts).
"""

from __future__ import annotations

from server.client.connection import (
    Client,
    ClientError,
    ConnectionLost,
    Refused,
    RequestFailed,
    RequestTimeout,
    TableView,
    guest_token,
    http_base,
    login,
    register,
)
from server.client.wire import (
    Event,
    Format,
    GameState,
    Reply,
    ServerError,
    TableEvent,
    TableState,
    Welcome,
    as_play,
    decode,
    default_decision,
    encode,
    parse_event,
)

__all__ = [
    "Client",
    "ClientError",
    "ConnectionLost",
    "Event",
    "Format",
    "GameState",
    "Refused",
    "Reply",
    "RequestFailed",
    "RequestTimeout",
    "ServerError",
    "TableEvent",
    "TableState",
    "TableView",
    "Welcome",
    "as_play",
    "decode",
    "default_decision",
    "encode",
    "guest_token",
    "http_base",
    "login",
    "parse_event",
    "register",
]

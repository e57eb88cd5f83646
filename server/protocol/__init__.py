"""The wire protocol, pure: codec (JSON text / msgpack binary), client messages, error codes.

Nothing here does I/O; ``PROTOCOL.md`` is the human-readable contract this package implements.
"""

from __future__ import annotations

from server.protocol.codec import Outgoing, WireFormat, decode, encode
from server.protocol.errors import ErrorCode, FrameError, ProtocolError
from server.protocol.messages import (
    GAME_ACTIONS,
    AcceptResign,
    CreateTable,
    Double,
    Drop,
    Hello,
    Join,
    Leave,
    ListTables,
    Message,
    Ping,
    Play,
    RejectResign,
    RequestId,
    Resign,
    ResignKind,
    Roll,
    Sync,
    TableMessage,
    TableMode,
    Take,
    Unwatch,
    Watch,
    parse_message,
    ref_of,
)

__all__ = [
    "GAME_ACTIONS",
    "AcceptResign",
    "CreateTable",
    "Double",
    "Drop",
    "ErrorCode",
    "FrameError",
    "Hello",
    "Join",
    "Leave",
    "ListTables",
    "Message",
    "Outgoing",
    "Ping",
    "Play",
    "ProtocolError",
    "RejectResign",
    "RequestId",
    "Resign",
    "ResignKind",
    "Roll",
    "Sync",
    "TableMessage",
    "TableMode",
    "Take",
    "Unwatch",
    "Watch",
    "WireFormat",
    "decode",
    "encode",
    "parse_message",
    "ref_of",
]

"""Error codes a client can receive, and the one exception that carries them.

Exception tree::

    ProtocolError(ValueError)       code, message, field, close_code
      FrameError                    a frame could not be decoded at all (bad_frame)

:class:`ErrorCode` is the one vocabulary of refusals: every code the server sends is one of its
members, and ``PROTOCOL.md`` §9 lists each one with its meaning (a test holds the two to each
other). Every code is stable: clients and bots branch on it. The rules' errors
(``server.rules.errors``) and matchmaking's (``server.matchmaking.errors``) carry members of it
too, so what they refuse reaches the client unchanged.

A refusal reaches the client in one shape, written here once: :func:`error_message` (the
WebSocket ``error`` message, PROTOCOL.md §4) and :func:`http_error_body` (the HTTP body
``{"error": {...}}``); :func:`retry_later` sets the seconds to wait the way every reply states
them (whole seconds, at least 1).
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    # Frames and messages
    BAD_FRAME = "bad_frame"  # not valid JSON / msgpack
    BAD_MESSAGE = "bad_message"  # decoded, but not an object with a string "type"
    UNKNOWN_TYPE = "unknown_type"
    MISSING_FIELD = "missing_field"
    BAD_FIELD = "bad_field"  # wrong type, out of range, or not one of the allowed values
    RATE_LIMITED = "rate_limited"
    # Authentication
    AUTH_REQUIRED = "auth_required"
    AUTH_FAILED = "auth_failed"
    ALREADY_AUTHENTICATED = "already_authenticated"
    TOO_MANY_CONNECTIONS = "too_many_connections"
    # Lobby
    NO_SUCH_TABLE = "no_such_table"
    TABLE_FULL = "table_full"
    ALREADY_SEATED = "already_seated"
    NOT_SEATED = "not_seated"
    TOO_MANY_WATCHERS = "too_many_watchers"
    TOO_MANY_WATCHES = "too_many_watches"  # this socket watches socket_watch_max tables
    TOO_MANY_TABLES = "too_many_tables"
    SAME_PLAYER = "same_player"
    # Matchmaking (server.matchmaking.errors keeps the same codes)
    UNKNOWN_POOL = "unknown_pool"
    IN_RANKED_GAME = "in_ranked_game"
    GUEST_NOT_ALLOWED = "guest_not_allowed"
    NOT_QUEUED = "not_queued"
    QUEUE_FULL = "queue_full"
    INVALID_TICKET = "invalid_ticket"
    MATCHMAKING_ERROR = "matchmaking_error"  # a matchmaking refusal no code above names
    # Games
    NOT_PLAYING = "not_playing"  # the table has no game in progress
    GAME_OVER = "game_over"
    # The rules (server.rules.errors)
    NOT_YOUR_TURN = "not_your_turn"
    WRONG_PHASE = "wrong_phase"
    ILLEGAL_PLAY = "illegal_play"  # the message says which rule (IllegalPlayError.reason)
    CANNOT_DOUBLE = "cannot_double"  # the opponent owns the cube
    CUBE_DISABLED = "cube_disabled"  # Crawford game, 1-point match, cube off
    MAX_CUBE = "max_cube"
    NO_RESIGNATION = "no_resignation"  # nothing to accept or reject
    INVALID_SIDE = "invalid_side"
    INVALID_KIND = "invalid_kind"  # a resignation kind
    INVALID_REASON = "invalid_reason"  # a forfeit reason
    MATCH_OVER = "match_over"
    GAME_IN_PROGRESS = "game_in_progress"  # the match's next game before this one ended
    INVALID_POSITION_ID = "invalid_position_id"
    INVALID_MATCH_ID = "invalid_match_id"
    DICE_EXHAUSTED = "dice_exhausted"  # a ScriptedDice ran out
    ILLEGAL_ACTION = "illegal_action"  # an action the rules refuse that no code above names
    RULES_ERROR = "rules_error"  # a rules refusal that no code above names
    # Playing the computer
    TOO_MANY_BOT_GAMES = "too_many_bot_games"
    BOT_NOT_ALLOWED = "bot_not_allowed"
    # Chat (PROTOCOL.md §16)
    NOT_AT_TABLE = "not_at_table"  # chat from a socket neither seated nor watching there
    CHAT_RATE_LIMITED = "chat_rate_limited"
    CHAT_MUTED = "chat_muted"  # muted by an operator
    NO_SUCH_MESSAGE = "no_such_message"  # report of a message the table does not hold
    REPORTS_FULL = "reports_full"  # report refused: reports_kept reports are open
    # Server
    UNAVAILABLE = "unavailable"  # the table's node or Redis did not answer
    INTERNAL = "internal_error"
    # HTTP only
    NAME_TAKEN = "name_taken"
    INVALID_CREDENTIALS = "invalid_credentials"
    UNAUTHORIZED = "unauthorized"
    BUSY = "busy"
    BAD_REQUEST = "bad_request"
    NOT_FOUND = "not_found"  # no such path, player or ladder
    METHOD_NOT_ALLOWED = "method_not_allowed"
    TOO_BIG = "too_big"  # the request body is over http_max_body
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"  # a body that is not application/json
    NO_SUCH_GAME = "no_such_game"  # no record of that game, or a private one not yours
    # HTTP only: tournaments
    FORBIDDEN = "forbidden"  # a runner key acting on another runner's tournament
    NO_SUCH_TOURNAMENT = "no_such_tournament"
    CONFLICT = "conflict"  # podium repeated with other players, register after the start ...


UNAVAILABLE_MESSAGE = "storage unavailable, retry"
"""The message of an ``unavailable`` refusal when Redis (or the network to it) is away."""
INTERNAL_MESSAGE = "internal error; the game is unchanged"
"""The message of every ``internal_error`` refusal (a server fault)."""


class ProtocolError(ValueError):
    """Something a client sent is refused. ``field`` names the offending field when there is one.

    ``close_code`` is set only for faults that end the connection (for example 1008 for a
    flood); the connection stays open otherwise. ``retry_after`` (seconds) is set on a
    ``rate_limited`` refusal: the reply's ``retry_after`` field, or HTTP ``Retry-After``.
    """

    retry_after: float | None = None
    until: float | None = None  # chat_muted: when the operator's mute ends (Unix s)

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        field: str | None = None,
        close_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)  # a member, whatever str subclass came in
        self.message = message
        self.field = field
        self.close_code = close_code


class FrameError(ProtocolError):
    """The frame's bytes are not a JSON / msgpack document."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.BAD_FRAME, message)


def wait_seconds(seconds: float) -> int:
    """A wait as every reply states it (``retry_after``, HTTP ``Retry-After``): whole
    seconds, rounded up, at least 1."""
    return max(1, math.ceil(seconds))


def retry_later(exc: ProtocolError, seconds: float) -> ProtocolError:
    """``exc`` carrying the wait before a retry (its ``retry_after``, :func:`wait_seconds`)."""
    exc.retry_after = wait_seconds(seconds)
    return exc


def error_message(
    exc: ProtocolError, ref: object | None = None, table: str | None = None
) -> dict[str, Any]:
    """The ``error`` message refusing a request (PROTOCOL.md §4): ``code``, ``message``, and
    when set ``field``, ``ref`` (the request's ``id``), ``table``, ``retry_after`` (seconds)
    and ``until`` (``chat_muted``: when the mute ends, Unix seconds)."""
    message: dict[str, Any] = {"type": "error", "code": str(exc.code),
                               "message": exc.message}
    if exc.field is not None:
        message["field"] = exc.field
    if ref is not None:
        message["ref"] = ref
    if table is not None:
        message["table"] = table
    if exc.retry_after is not None:
        message["retry_after"] = exc.retry_after
    if exc.until is not None:
        message["until"] = exc.until
    return message


def http_error_body(exc: ProtocolError) -> dict[str, Any]:
    """The body of an HTTP error answer: ``{"error": {"code", "message", "field"?}}`` (the
    wait goes in the ``Retry-After`` header)."""
    body: dict[str, Any] = {"code": str(exc.code), "message": exc.message}
    if exc.field is not None:
        body["field"] = exc.field
    return {"error": body}

"""Errors of lobby matchmaking, each with a stable ``code`` a client can act on.

::

    MatchmakingError(ValueError)        code "matchmaking_error"
    ├── UnknownPoolError                code "unknown_pool"
    ├── GuestNotAllowedError            code "guest_not_allowed"
    ├── InRankedGameError               code "in_ranked_game"
    ├── InvalidTicketError              code "invalid_ticket"   (names the bad field)
    ├── NotQueuedError                  code "not_queued"
    └── QueueFullError                  code "queue_full"

Every error carries ``code`` (for the wire: a member of the one vocabulary of refusals,
:class:`server.protocol.errors.ErrorCode`) and ``field`` (the request field at fault, or
``None``); ``str(error)`` is a sentence a player can read.
"""

from __future__ import annotations

from server.protocol.errors import ErrorCode


class MatchmakingError(ValueError):
    """Base of every matchmaking error; ``code`` is stable, ``field`` names the bad input."""

    code: ErrorCode = ErrorCode.MATCHMAKING_ERROR

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnknownPoolError(MatchmakingError):
    """The requested pool does not exist."""

    code = ErrorCode.UNKNOWN_POOL


class GuestNotAllowedError(MatchmakingError):
    """A guest asked for a rated pool; rated games need an account on both sides."""

    code = ErrorCode.GUEST_NOT_ALLOWED


class InRankedGameError(MatchmakingError):
    """The player is in a ranked game or rated match and may not queue until it ends."""

    code = ErrorCode.IN_RANKED_GAME


class InvalidTicketError(MatchmakingError):
    """A ticket field is missing, of the wrong type or out of its limits."""

    code = ErrorCode.INVALID_TICKET


class NotQueuedError(MatchmakingError):
    """The player has no ticket to cancel."""

    code = ErrorCode.NOT_QUEUED


class QueueFullError(MatchmakingError):
    """The pool holds as many tickets as it may; try again later."""

    code = ErrorCode.QUEUE_FULL


ERROR_CODES: tuple[ErrorCode, ...] = (
    MatchmakingError.code,
    UnknownPoolError.code,
    GuestNotAllowedError.code,
    InRankedGameError.code,
    InvalidTicketError.code,
    NotQueuedError.code,
    QueueFullError.code,
)

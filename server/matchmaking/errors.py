"""Errors of lobby matchmaking, each with a stable ``code`` a client can act on.

::

    MatchmakingError(ValueError)        code "matchmaking_error"
    ├── UnknownPoolError                code "unknown_pool"
    ├── GuestNotAllowedError            code "guest_not_allowed"
    ├── InRankedGameError               code "in_ranked_game"
    ├── InvalidTicketError              code "invalid_ticket"   (names the bad field)
    ├── NotQueuedError                  code "not_queued"
    └── QueueFullError                  code "queue_full"

Every error carries ``code`` (for the wire) and ``field`` (the request field at fault, or
``None``); ``str(error)`` is a sentence a player can read.
"""

from __future__ import annotations


class MatchmakingError(ValueError):
    """Base of every matchmaking error; ``code`` is stable, ``field`` names the bad input."""

    code: str = "matchmaking_error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnknownPoolError(MatchmakingError):
    """The requested pool does not exist."""

    code = "unknown_pool"


class GuestNotAllowedError(MatchmakingError):
    """A guest asked for a rated pool; rated games need an account on both sides."""

    code = "guest_not_allowed"


class InRankedGameError(MatchmakingError):
    """The player is in a ranked game or rated match and may not queue until it ends."""

    code = "in_ranked_game"


class InvalidTicketError(MatchmakingError):
    """A ticket field is missing, of the wrong type or out of its limits."""

    code = "invalid_ticket"


class NotQueuedError(MatchmakingError):
    """The player has no ticket to cancel."""

    code = "not_queued"


class QueueFullError(MatchmakingError):
    """The pool holds as many tickets as it may; try again later."""

    code = "queue_full"


ERROR_CODES: tuple[str, ...] = (
    MatchmakingError.code,
    UnknownPoolError.code,
    GuestNotAllowedError.code,
    InRankedGameError.code,
    InvalidTicketError.code,
    NotQueuedError.code,
    QueueFullError.code,
)

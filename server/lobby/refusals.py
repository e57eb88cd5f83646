"""What a message handler raised, turned into the client's ``error`` reply: the one place
that does it for every handler (the lobby's, a forwarded command's on its owner node,
matchmaking's, playing the computer's).

- a :class:`ProtocolError` is the refusal itself;
- a :class:`MatchmakingError` becomes one with the same code (``field`` only when it is one
  the client sent: ``pool``), a :class:`RulesError` one with the same code;
- Redis or the network away (``RedisError``, ``OSError``) is :func:`store_away`:
  ``unavailable`` with ``retry_after`` (this node's tables are held meanwhile);
- anything else is a bug: logged with its traceback, answered ``internal_error``.

Every refusal is counted under its code (``table42_errors_total``) by the node that answers.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import RedisError

from server.matchmaking.errors import MatchmakingError
from server.metrics import Metrics
from server.protocol.errors import (
    INTERNAL_MESSAGE,
    UNAVAILABLE_MESSAGE,
    ErrorCode,
    ProtocolError,
    error_message,
    retry_later,
)
from server.rules.errors import RulesError
from server.tables.machine import HOLD_RETRY_AFTER

log = logging.getLogger("server.lobby")


def store_away() -> ProtocolError:
    """The refusal of a request while this node cannot store (Redis away: its tables are
    held): ``unavailable`` with ``retry_after``."""
    return retry_later(ProtocolError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE),
                       HOLD_RETRY_AFTER)


def refusal(exc: Exception, doing: str) -> ProtocolError:
    """The refusal answering a handler that raised ``exc`` while ``doing`` (for the log)."""
    if isinstance(exc, ProtocolError):
        return exc
    if isinstance(exc, MatchmakingError):
        return ProtocolError(exc.code, str(exc), field=exc.field if exc.field == "pool" else None)
    if isinstance(exc, RulesError):
        return ProtocolError(exc.code, str(exc))
    if isinstance(exc, RedisError | OSError):
        log.warning("Redis error %s: %s", doing, exc)
        return store_away()
    log.error("internal error %s", doing, exc_info=exc)
    return ProtocolError(ErrorCode.INTERNAL, INTERNAL_MESSAGE)


def error_reply(exc: Exception, ref: object | None, table: str | None, *, doing: str,
                metrics: Metrics) -> dict[str, Any]:
    """The ``error`` message answering a handler that raised ``exc``, counted in ``metrics``."""
    err = refusal(exc, doing)
    metrics.error(err.code)
    return error_message(err, ref, table)

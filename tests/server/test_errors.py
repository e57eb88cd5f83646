"""One error envelope (server/protocol/errors.py) and one place that turns what a message
handler raised into it (server/lobby/refusals.py)."""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError

from server.lobby.refusals import error_reply, refusal
from server.matchmaking.errors import InvalidTicketError, UnknownPoolError
from server.metrics import Metrics
from server.protocol.errors import (
    ErrorCode,
    ProtocolError,
    error_message,
    http_error_body,
    retry_later,
)


def test_the_error_message_carries_only_what_is_set() -> None:
    assert error_message(ProtocolError(ErrorCode.NOT_SEATED, "no")) == {
        "type": "error", "code": "not_seated", "message": "no"}
    exc = retry_later(ProtocolError(ErrorCode.CHAT_RATE_LIMITED, "slow", field="text"), 3.2)
    exc.until = 99.0
    assert error_message(exc, 8, "T") == {
        "type": "error", "code": "chat_rate_limited", "message": "slow", "field": "text",
        "ref": 8, "table": "T", "retry_after": 4, "until": 99.0}


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert [retry_later(ProtocolError("x", "y"), s).retry_after for s in (0.0, 0.2, 1.0, 1.01)] \
        == [1, 1, 1, 2]


def test_the_http_body() -> None:
    assert http_error_body(ProtocolError(ErrorCode.BAD_FIELD, "m", field="f")) == {
        "error": {"code": "bad_field", "message": "m", "field": "f"}}


def test_what_a_handler_raised_becomes_one_refusal() -> None:
    mine = ProtocolError(ErrorCode.TABLE_FULL, "full")
    assert refusal(mine, "t") is mine
    assert (refusal(UnknownPoolError("no pool", field="pool"), "t").field,
            refusal(InvalidTicketError("bad", field="rating"), "t").field) == ("pool", None)
    assert refusal(RedisConnectionError("down"), "t").code == ErrorCode.UNAVAILABLE
    assert refusal(OSError("reset"), "t").code == ErrorCode.UNAVAILABLE
    internal = refusal(KeyError("bug"), "t")
    assert (internal.code, internal.message) == (
        "internal_error", "internal error; the game is unchanged")


def test_every_refusal_is_counted_under_its_code() -> None:
    metrics = Metrics()
    reply = error_reply(KeyError("bug"), 3, "T", doing="testing", metrics=metrics)
    assert (reply["code"], reply["ref"], reply["table"]) == ("internal_error", 3, "T")
    assert b'code="internal_error"} 1.0' in metrics.render()

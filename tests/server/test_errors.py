"""One error envelope (server/protocol/errors.py) and one place that turns what a message
handler raised into it (server/lobby/refusals.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from server.lobby.refusals import error_reply, refusal
from server.matchmaking.errors import (
    ERROR_CODES,
    InvalidTicketError,
    MatchmakingError,
    QueueFullError,
    UnknownPoolError,
)
from server.matchmaking.policy import admit
from server.metrics import Metrics
from server.protocol.errors import (
    ErrorCode,
    ProtocolError,
    error_message,
    http_error_body,
    retry_later,
)
from server.rules import Game, ScriptedDice, Side, decode_position_id
from server.rules.errors import InvalidIdError, RulesError


def test_the_error_message_carries_only_what_is_set() -> None:
    assert error_message(ProtocolError(ErrorCode.NOT_SEATED, "no")) == {
        "type": "error", "code": "not_seated", "message": "no"}
    exc = retry_later(ProtocolError(ErrorCode.CHAT_RATE_LIMITED, "slow", field="text"), 3.2)
    exc.until = 99.0
    assert error_message(exc, 8, "T") == {
        "type": "error", "code": "chat_rate_limited", "message": "slow", "field": "text",
        "ref": 8, "table": "T", "retry_after": 4, "until": 99.0}


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert [retry_later(ProtocolError(ErrorCode.BUSY, "y"), s).retry_after
            for s in (0.0, 0.2, 1.0, 1.01)] == [1, 1, 1, 2]


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


PROTOCOL = Path(__file__).resolve().parents[2] / "PROTOCOL.md"


def protocol_table_codes() -> set[str]:
    """Every code of PROTOCOL.md §9's table (the backticked names of its first column)."""
    section = PROTOCOL.read_text("utf-8").split("## 9. Error codes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {code for row in rows for code in re.findall(r"`([a-z_]+)`", row.split(" | ")[0])}


def test_the_one_vocabulary_is_the_protocol_table() -> None:
    assert {code.value for code in ErrorCode} == protocol_table_codes()


def test_a_refusal_takes_only_a_code_of_the_vocabulary() -> None:
    assert ProtocolError("table_full", "m").code is ErrorCode.TABLE_FULL  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not_a_code"):
        ProtocolError("not_a_code", "m")  # type: ignore[arg-type]


def codes_of(cls: type[RulesError] | type[MatchmakingError]) -> list[object]:
    """The ``code`` of ``cls`` and of each of its subclasses."""
    return [cls.code, *(code for sub in cls.__subclasses__() for code in codes_of(sub))]


def test_rules_and_matchmaking_errors_carry_members_of_the_vocabulary() -> None:
    codes = [*codes_of(RulesError), *codes_of(MatchmakingError)]
    assert len(codes) >= 12
    assert all(isinstance(code, ErrorCode) for code in codes), codes
    assert all(isinstance(code, ErrorCode) for code in ERROR_CODES)


def test_each_rules_error_code_a_rules_source_names_is_in_the_vocabulary() -> None:
    # Every ``code=`` a rules module passes to an error is written ErrorCode.<MEMBER>.
    named: set[str] = set()
    for path in (Path(__file__).resolve().parents[2] / "server" / "rules").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "code":
                assert isinstance(node.value, ast.Attribute), (path.name, ast.dump(node.value))
                assert ast.unparse(node.value.value) == "ErrorCode", path.name
                named.add(node.value.attr)
    assert {"NOT_YOUR_TURN", "WRONG_PHASE", "MAX_CUBE", "INVALID_POSITION_ID"} <= named
    assert named <= set(ErrorCode.__members__)


def test_a_rules_refusal_reaches_the_client_with_its_code() -> None:
    game = Game(dice=ScriptedDice([3, 1]))
    game.start()
    assert game.turn is not None
    with pytest.raises(RulesError) as caught:
        game.roll(Side(1 - game.turn))
    assert caught.value.code is ErrorCode.WRONG_PHASE
    assert error_message(refusal(caught.value, "t"))["code"] == "wrong_phase"
    with pytest.raises(InvalidIdError) as bad_id:
        decode_position_id("nope")
    assert refusal(bad_id.value, "t").code is ErrorCode.INVALID_POSITION_ID


def test_a_matchmaking_refusal_reaches_the_client_with_its_code() -> None:
    with pytest.raises(MatchmakingError) as caught:
        admit("no-such-pool", is_guest=False, in_ranked_game=False)
    assert caught.value.code is ErrorCode.UNKNOWN_POOL
    reply = error_message(refusal(caught.value, "t"))
    assert (reply["code"], reply["field"]) == ("unknown_pool", "pool")
    assert refusal(QueueFullError("full"), "t").code is ErrorCode.QUEUE_FULL

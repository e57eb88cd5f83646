"""Pure layers of the server: codec, message validation, session state machine, settings,
client addresses and the rating decision. No sockets, no Redis."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import msgpack
import pytest

from server.net.addresses import client_address
from server.protocol import (
    CreateTable,
    ErrorCode,
    FrameError,
    Hello,
    Outgoing,
    Play,
    ProtocolError,
    Sync,
    TableMode,
    WireFormat,
    decode,
    encode,
    parse_message,
)
from server.protocol.session import (
    Accepted,
    CloseConnection,
    Refused,
    Session,
    SessionLimits,
    TokenBucket,
)
from server.tables.ratings import RatedPlayer, plan_rating

# --- codec -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(WireFormat))
def test_codec_round_trip(fmt: WireFormat) -> None:
    obj = {"type": "play", "table": "t1", "play": "24/18 13/8", "n": [1, 2.5, None, True]}
    assert decode(encode(obj, fmt), fmt) == obj


@pytest.mark.parametrize("fmt", list(WireFormat))
def test_codec_replaces_lone_surrogates_instead_of_failing(fmt: WireFormat) -> None:
    obj = decode(b'{"type": "play", "play": "\\ud800x"}', WireFormat.JSON)
    assert obj["play"] == "\ud800x"
    assert decode(encode(obj, fmt), fmt)["play"] == "?x"


def test_outgoing_encodes_once_per_format() -> None:
    out = Outgoing({"type": "x", "v": 1})
    assert out.frame(WireFormat.JSON) is out.frame(WireFormat.JSON)
    assert json.loads(out.frame(WireFormat.JSON)) == {"type": "x", "v": 1}
    assert msgpack.unpackb(out.frame(WireFormat.MSGPACK)) == {"type": "x", "v": 1}


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (b"{not json", WireFormat.JSON),
        (b"\xff\xfe", WireFormat.JSON),
        (b'{"a": NaN}', WireFormat.JSON),
        (b"[" * 200 + b"]" * 200, WireFormat.JSON),
        (b"\xc1", WireFormat.MSGPACK),  # never-used byte
        (msgpack.packb(msgpack.ExtType(5, b"xx")), WireFormat.MSGPACK),
        (msgpack.packb({1: 2}), WireFormat.MSGPACK),  # non-string key
        (msgpack.packb({"a": 1}) + b"\x00", WireFormat.MSGPACK),  # trailing data
        (b"\x91" * 100 + b"\xc0", WireFormat.MSGPACK),  # nested too deep
    ],
)
def test_codec_refuses_bad_frames(data: bytes, fmt: WireFormat) -> None:
    with pytest.raises(FrameError) as info:
        decode(data, fmt)
    assert info.value.code == "bad_frame"


# --- message validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "code", "field"),
    [
        ([1, 2], ErrorCode.BAD_MESSAGE, None),
        ("hello", ErrorCode.BAD_MESSAGE, None),
        ({}, ErrorCode.MISSING_FIELD, "type"),
        ({"type": 5}, ErrorCode.BAD_FIELD, "type"),
        ({"type": "fly"}, ErrorCode.UNKNOWN_TYPE, "type"),
        ({"type": "join"}, ErrorCode.MISSING_FIELD, "table"),
        ({"type": "join", "table": 7}, ErrorCode.BAD_FIELD, "table"),
        ({"type": "join", "table": "has space"}, ErrorCode.BAD_FIELD, "table"),
        ({"type": "join", "table": "x" * 65}, ErrorCode.BAD_FIELD, "table"),
        ({"type": "play", "table": "t"}, ErrorCode.MISSING_FIELD, "play"),
        ({"type": "play", "table": "t", "play": ["24/18"]}, ErrorCode.BAD_FIELD, "play"),
        ({"type": "play", "table": "t", "play": "x" * 65}, ErrorCode.BAD_FIELD, "play"),
        ({"type": "sync", "table": "t", "since": -1}, ErrorCode.BAD_FIELD, "since"),
        ({"type": "sync", "table": "t", "since": True}, ErrorCode.BAD_FIELD, "since"),
        ({"type": "sync", "table": "t", "since": 1.5}, ErrorCode.BAD_FIELD, "since"),
        ({"type": "create_table", "mode": "ranked"}, ErrorCode.BAD_FIELD, "mode"),
        ({"type": "create_table"}, ErrorCode.MISSING_FIELD, "mode"),
        ({"type": "create_table", "mode": "boosted", "match_length": 999},
         ErrorCode.BAD_FIELD, "match_length"),
        ({"type": "resign", "table": "t", "kind": "double"}, ErrorCode.BAD_FIELD, "kind"),
        ({"type": "ping", "id": [1]}, ErrorCode.BAD_FIELD, "id"),
        ({"type": "ping", "id": "x" * 65}, ErrorCode.BAD_FIELD, "id"),
        ({"type": "hello", "token": ""}, ErrorCode.BAD_FIELD, "token"),
    ],
)
def test_parse_message_errors(obj: Any, code: ErrorCode, field: str | None) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_message(obj)
    assert info.value.code == code
    assert info.value.field == field


def test_parse_message_builds_typed_messages() -> None:
    assert parse_message({"type": "play", "table": "t-1", "play": "8/4(2)", "id": 9}) == Play(
        table="t-1", play="8/4(2)", ref=9
    )
    assert parse_message({"type": "auth", "token": "abc"}) == Hello(token="abc")
    assert parse_message({"type": "sync", "table": "t", "extra": {"ignored": 1}}) == Sync(
        table="t", since=0
    )
    created = parse_message({"type": "create_table", "mode": "tournament",
                             "tournament_id": "cup-7", "match_length": 5, "id": "r1"})
    assert created == CreateTable(mode=TableMode.TOURNAMENT, match_length=5,
                                  tournament_id="cup-7", ref="r1")


# --- session -----------------------------------------------------------------------------

LIMITS = SessionLimits(rate=10.0, burst=5, flood_close_after=20, auth_timeout=3.0)


def frame(obj: Any) -> str:
    return json.dumps(obj)


def test_session_requires_auth_first() -> None:
    s = Session(LIMITS, now=0.0)
    out = s.receive(frame({"type": "list_tables", "id": 3}), binary=False, now=0.1)
    assert isinstance(out, Refused) and out.error.code == "auth_required" and out.ref == 3
    assert isinstance(s.receive(frame({"type": "ping"}), binary=False, now=0.2), Accepted)
    hello = s.receive(frame({"type": "hello", "token": "t"}), binary=False, now=0.3)
    assert isinstance(hello, Accepted) and isinstance(hello.message, Hello)
    s.authenticate("alice")
    assert s.is_ready and s.player == "alice"
    again = s.receive(frame({"type": "hello", "token": "t"}), binary=False, now=0.4)
    assert isinstance(again, Refused) and again.error.code == "already_authenticated"


def test_session_auth_timeout_closes_with_1008() -> None:
    s = Session(LIMITS, now=0.0)
    assert not s.is_auth_expired(2.9)
    assert s.is_auth_expired(3.1)
    out = s.receive(frame({"type": "ping"}), binary=False, now=3.5)
    assert out == CloseConnection(1008, "authentication timed out")


def test_session_format_follows_latest_frame() -> None:
    s = Session(LIMITS, now=0.0, player="p")
    assert s.format is WireFormat.JSON
    s.receive(msgpack.packb({"type": "ping"}), binary=True, now=0.0)
    # mypy keeps the narrowing from the assert above across s.receive(), which sets it.
    assert s.format is WireFormat.MSGPACK  # type: ignore[comparison-overlap]
    s.receive(frame({"type": "ping"}), binary=False, now=0.0)
    assert s.format is WireFormat.JSON


def test_session_rate_limit_then_flood_close() -> None:
    s = Session(LIMITS, now=0.0, player="p")
    ping = frame({"type": "ping"})
    results = [s.receive(ping, binary=False, now=0.0) for _ in range(5)]
    assert all(isinstance(r, Accepted) for r in results)
    limited = s.receive(ping, binary=False, now=0.0)
    assert isinstance(limited, Refused) and limited.error.code == "rate_limited"
    # 0.1 s refills one token at 10/s: accepted again, the refusal streak resets.
    assert isinstance(s.receive(ping, binary=False, now=0.1), Accepted)
    outcomes = [s.receive(ping, binary=False, now=0.1) for _ in range(20)]
    assert all(isinstance(o, Refused) for o in outcomes[:19])
    assert outcomes[19] == CloseConnection(1008, "rate limit exceeded")
    assert isinstance(s.receive(ping, binary=False, now=9.0), CloseConnection)


def test_session_garbage_counts_against_the_rate() -> None:
    s = Session(LIMITS, now=0.0, player="p")
    for _ in range(5):
        out = s.receive(b"\xc1", binary=True, now=0.0)
        assert isinstance(out, Refused) and out.error.code == "bad_frame"
    out = s.receive(b"\xc1", binary=True, now=0.0)
    assert isinstance(out, Refused) and out.error.code == "rate_limited"


def test_token_bucket_refills_up_to_burst() -> None:
    bucket = TokenBucket.full(rate=2.0, burst=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(0.5)  # one token back after 0.5 s at 2/s
    assert not bucket.take(0.5)
    assert not bucket.take(0.4)  # time going backwards refills nothing
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]


# --- client address --------------------------------------------------------------------------

TRUSTED = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.9.0.0/16"))


@pytest.mark.parametrize(
    ("peer", "xff", "expected"),
    [
        ("127.0.0.1", None, "127.0.0.1"),
        ("127.0.0.1", "203.0.113.9", "203.0.113.9"),
        ("127.0.0.1", "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # rightmost untrusted
        ("127.0.0.1", "203.0.113.9, 10.9.1.1", "203.0.113.9"),  # skip a trusted hop
        ("198.51.100.7", "203.0.113.9", "198.51.100.7"),  # untrusted peer: header ignored
        ("127.0.0.1", "garbage", "127.0.0.1"),
        ("127.0.0.1", "[2001:db8::1]:443", "2001:db8::1"),
        ("127.0.0.1", "203.0.113.9:5555", "203.0.113.9"),
        (None, "203.0.113.9", "unknown"),
    ],
)
def test_client_address(peer: str | None, xff: str | None, expected: str) -> None:
    assert client_address(peer, xff, TRUSTED) == expected


# --- rating decision ---------------------------------------------------------------------------

A = RatedPlayer("alice", False, "1.1.1.1")
B = RatedPlayer("bob", False, "2.2.2.2")


@pytest.mark.parametrize(
    ("mode", "length", "players", "ladder", "boosted", "reason"),
    [
        (TableMode.COMPETITIVE, 0, (A, B), "table42", False, None),
        (TableMode.COMPETITIVE, 5, (A, B), "fibs", False, None),
        (TableMode.BOOSTED, 0, (A, B), None, True, "boosted_mode"),
        (TableMode.PRIVATE, 0, (A, B), None, False, "private_room"),
        (TableMode.TOURNAMENT, 3, (A, B), None, False, "tournament_game"),
        (TableMode.COMPETITIVE, 0, (A, RatedPlayer("guest-1", True, "3.3.3.3")), None, False,
         "guest_player"),
        (TableMode.COMPETITIVE, 0, (A, RatedPlayer("bob", False, "1.1.1.1")), None, False,
         "same_address"),
        (TableMode.BOOSTED, 0, (A, RatedPlayer("bob", False, "1.1.1.1")), None, False,
         "same_address"),
    ],
)
def test_plan_rating(
    mode: TableMode, length: int, players: Any, ladder: str | None, boosted: bool,
    reason: str | None,
) -> None:
    plan = plan_rating(mode, length, players)
    assert (plan.ladder, plan.boosted, plan.unrated_reason) == (ladder, boosted, reason)
    assert plan.to_dict()["rated"] is (ladder is not None)

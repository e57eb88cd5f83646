"""The one-pass typed decode (msgspec) against the field-by-field validator: whenever the
fast path accepts a frame, the long way accepts it too and builds the same message; the usual
frames take the fast path. Pure."""

from __future__ import annotations

import json
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.protocol.codec import WireFormat, decode
from server.protocol.errors import ProtocolError
from server.protocol.messages import Hello, Play, Sync, decode_typed, parse_message

USUAL: list[dict[str, Any]] = [
    {"type": "hello", "token": "abc", "protocol": 2},
    {"type": "auth", "token": "abc"},
    {"type": "ping", "id": "x"},
    {"type": "list_tables", "mode": "boosted"},
    {"type": "create_table", "mode": "private", "match_length": 3, "id": 7},
    {"type": "join", "table": "kB9rMFnnuYBV"},
    {"type": "play", "table": "t1", "play": [[24, 18], [13, 8]], "id": 17},
    {"type": "play", "table": "t1", "play": "24/18 13/8"},
    {"type": "roll", "table": "t1"},
    {"type": "sync", "table": "t1", "since": 12},
    {"type": "resign", "table": "t1", "kind": "gammon"},
    {"type": "queue", "pool": "competitive"},
    {"type": "queue_status"},
]


def both(obj: Any) -> list[tuple[bytes | str, bool]]:
    return [(json.dumps(obj), False), (msgpack.packb(obj), True)]


@pytest.mark.parametrize("obj", USUAL)
def test_usual_frames_take_the_fast_path(obj: dict[str, Any]) -> None:
    for payload, binary in both(obj):
        fast = decode_typed(payload, binary=binary)
        assert fast is not None, obj
        fmt = WireFormat.MSGPACK if binary else WireFormat.JSON
        slow = parse_message(decode(payload, fmt))
        assert type(fast).TYPE == type(slow).TYPE
        assert {k: getattr(fast, k) for k in fast.__struct_fields__} == {
            k: getattr(slow, k) for k in slow.__struct_fields__}


def test_types_of_the_fast_path() -> None:
    play = decode_typed(b'{"type":"play","table":"t","play":[[24,18],[13,8]]}', binary=False)
    assert isinstance(play, Play) and play.play == ((24, 18), (13, 8))
    hello = decode_typed(msgpack.packb({"type": "auth", "token": "t"}), binary=True)
    assert isinstance(hello, Hello) and hello.TYPE == "hello"
    sync = decode_typed('{"type":"sync","table":"t","id":3}', binary=False)
    assert isinstance(sync, Sync) and (sync.since, sync.ref) == (0, 3)


field_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**54), st.floats(allow_nan=False),
    st.text(max_size=70), st.sampled_from(["t1", "competitive", "gammon", "24/18", "ok-id"]),
    st.lists(st.lists(st.integers(-1, 26), max_size=3), max_size=5),
)
frames = st.dictionaries(
    st.sampled_from(["type", "table", "play", "since", "id", "token", "mode", "kind",
                     "match_length", "tournament_id", "pool", "protocol", "extra"]),
    field_values, max_size=5,
) | st.fixed_dictionaries(
    {"type": st.sampled_from(["play", "sync", "hello", "join", "resign", "create_table",
                              "queue", "auth"])},
    optional={"table": field_values, "play": field_values, "since": field_values,
              "id": field_values, "token": field_values, "kind": field_values,
              "mode": field_values, "match_length": field_values, "pool": field_values,
              "protocol": field_values},
)


@settings(max_examples=600, deadline=None)
@given(frames, st.booleans())
def test_fast_path_never_accepts_what_the_long_way_refuses(obj: dict[str, Any],
                                                           binary: bool) -> None:
    payload: bytes | str = msgpack.packb(obj) if binary else json.dumps(obj)
    fast = decode_typed(payload, binary=binary)
    if fast is None:
        return
    fmt = WireFormat.MSGPACK if binary else WireFormat.JSON
    try:
        slow = parse_message(decode(payload, fmt))
    except ProtocolError as exc:  # pragma: no cover - the failure this test looks for
        raise AssertionError(f"fast path accepted {obj!r}, the long way: {exc.code}") from None
    assert type(fast).TYPE == type(slow).TYPE
    assert {k: getattr(fast, k) for k in fast.__struct_fields__} == {
        k: getattr(slow, k) for k in slow.__struct_fields__}

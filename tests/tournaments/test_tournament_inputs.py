"""Pure parts of tournaments: the runner's input checks, runner key shapes, the table result
that decides a bracket match."""

from __future__ import annotations

from typing import Any

import pytest

from server.protocol.errors import ProtocolError
from server.tournaments import spec
from server.tournaments.driver import deciding_winner
from server.tournaments.runner_keys import (
    PREFIX,
    RunnerKeyError,
    new_key,
    secret_digest,
    split_key,
    validate_name,
)


def test_create_defaults() -> None:
    created = spec.parse_create({"name": " Friday cup "}, 25)
    assert (created.name, created.visibility, created.prizes, created.match_length) == (
        "Friday cup", "public", (50, 25, 15), 0)
    assert created.format == {"kind": "game"}
    cleaned = spec.parse_create({"name": "\u202eFriday\n\u00a0cup\u200b"}, 25)
    assert cleaned.name == "Friday cup"  # PROTOCOL.md §16, "Text"
    match = spec.parse_create({"name": "x", "format": {"kind": "match", "length": 7},
                               "visibility": "private", "prizes": [0, 1000]}, 25)
    assert (match.format, match.visibility, match.prizes) == (
        {"kind": "match", "length": 7}, "private", (0, 1000))


@pytest.mark.parametrize(("body", "field", "code"), [
    ({}, "name", "missing_field"),
    ({"name": 5}, "name", "bad_field"),
    ({"name": "   "}, "name", "bad_field"),
    ({"name": "\u200b\n\u2028\u202e"}, "name", "bad_field"),  # nothing visible once cleaned
    ({"name": "x" * 81}, "name", "bad_field"),
    ({"name": "x", "visibility": None}, "visibility", "bad_field"),
    ({"name": "x", "prizes": []}, "prizes", "bad_field"),
    ({"name": "x", "prizes": [1, 2, 3, 4]}, "prizes", "bad_field"),
    ({"name": "x", "prizes": [True]}, "prizes", "bad_field"),
    ({"name": "x", "prizes": [1.5]}, "prizes", "bad_field"),
    ({"name": "x", "prizes": [1001]}, "prizes", "bad_field"),
    ({"name": "x", "format": "game"}, "format", "bad_field"),
    ({"name": "x", "format": {"kind": "match"}}, "format", "bad_field"),
    ({"name": "x", "format": {"kind": "match", "length": 26}}, "format", "bad_field"),
    ({"name": "x", "format": {"kind": "match", "length": True}}, "format", "bad_field"),
])
def test_create_refusals_name_the_field(body: dict[str, Any], field: str, code: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        spec.parse_create(body, 25)
    assert (caught.value.field, caught.value.code) == (field, code)


@pytest.mark.parametrize(("parse", "body", "field"), [
    (spec.parse_pairs, {}, "pairs"),
    (spec.parse_pairs, {"pairs": []}, "pairs"),
    (spec.parse_pairs, {"pairs": [["a"]]}, "pairs"),
    (spec.parse_pairs, {"pairs": [["a", "b"], ["b", "c"]]}, "pairs"),
    (spec.parse_pairs, {"pairs": [["a", "{x}"]]}, "pairs"),
    (spec.parse_pairs, {"pairs": [[f"a{i}", f"b{i}"] for i in range(65)]}, "pairs"),
    (spec.parse_podium, {"players": ["a", "b", "c", "d"]}, "players"),
    (spec.parse_podium, {"players": "abc"}, "players"),
    (spec.parse_no_show, {"no_show_seconds": 3601}, "no_show_seconds"),
    (spec.parse_no_show, {"no_show_seconds": "5"}, "no_show_seconds"),
])
def test_other_refusals(parse: Any, body: dict[str, Any], field: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse(body)
    assert caught.value.field == field


def test_pages() -> None:
    assert spec.parse_page({}) == (0, 20)
    assert spec.parse_page({"offset": "5", "limit": "100"}) == (5, 100)
    for query, field in (({"limit": "101"}, "limit"), ({"offset": "-1"}, "offset"),
                         ({"limit": "x"}, "limit")):
        with pytest.raises(ProtocolError) as caught:
            spec.parse_page(query)
        assert caught.value.field == field


def test_runner_key_shape() -> None:
    key, key_id, digest = new_key()
    assert key.startswith(PREFIX) and len(key_id) == 16
    parts = split_key(key)
    assert parts is not None and parts[0] == key_id and secret_digest(parts[1]) == digest
    assert len(parts[1]) >= 43  # 32 random bytes
    assert new_key()[0] != key
    for bad in ("", "t42rk_", "t42rk_xyz_abc", "t42rk_" + "g" * 16 + "_abc", key[6:],
                "t42rk_" + "a" * 16 + "_", key + "x" * 200):
        assert split_key(bad) is None, bad
    assert validate_name("acme-cup.2") == "acme-cup.2"
    for bad_name in ("", "-x", "a b", "x" * 41, 5):
        with pytest.raises(RunnerKeyError):
            validate_name(bad_name)


def _result(winner: str, loser: str, side: int, match_winner: int | None) -> dict[str, Any]:
    return {"winner": winner, "loser": loser, "winner_side": side,
            "match": None if match_winner is None else {"winner": match_winner}}


@pytest.mark.parametrize(("results", "length", "winner"), [
    ([], 0, None),
    ([_result("a", "b", 0, None)], 0, "a"),
    ([{"game_id": "x", "rating_error": "boom"}, _result("b", "a", 1, None)], 0, "b"),
    ([_result("a", "b", 0, None)], 3, None),  # a match still going on
    ([_result("a", "b", 0, None), _result("b", "a", 1, 1)], 3, "b"),
    # The match won by the side that lost its last game (e.g. a forfeit between games).
    ([_result("a", "b", 0, 1)], 3, "b"),
])
def test_deciding_winner(results: list[dict[str, Any]], length: int,
                         winner: str | None) -> None:
    assert deciding_winner(results, length) == winner


def test_registration_settings_are_checked() -> None:
    from server.tournaments.spec import CLOSED_REGISTRATION, MAX_PLAYERS, parse_registration

    now = 1_000_000.0
    assert parse_registration(None, "public", now) == CLOSED_REGISTRATION
    opened = parse_registration({"mode": "open", "cap": 8, "deadline": now + 60}, "public", now)
    assert opened.to_dict() == {"mode": "open", "cap": 8, "deadline": now + 60}
    assert parse_registration({"mode": "open"}, "public", now).cap == MAX_PLAYERS
    for bad, visibility in (({"mode": "open"}, "private"), ({"mode": "shut"}, "public"),
                            ({"cap": True}, "public"), ({"deadline": now}, "public"),
                            ({"deadline": now + 400 * 86400}, "public"), ("open", "public")):
        with pytest.raises(ProtocolError) as caught:
            parse_registration(bad, visibility, now)
        assert caught.value.field == "registration", bad

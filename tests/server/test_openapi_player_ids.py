"""The OpenAPI documents describe exactly the player ids the server accepts: every parameter
or body field naming a player carries ``server.protocol.ids.PLAYER_ID_PATTERN``, the account
name carries the account store's own pattern, and the server's checks accept a string if and
only if that pattern matches it (a property test over arbitrary text)."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.net.public_params import check_player
from server.protocol.errors import ProtocolError
from server.protocol.ids import PLAYER_ID_PATTERN
from server.store.accounts import NAME
from server.tournaments import spec


def document(name: str) -> dict[str, Any]:
    return dict(json.loads(resources.files("server").joinpath(name).read_text("utf-8")))


def player_inputs(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, schema) of every input naming a player: string parameters called player or
    opponent (the calculator's ``opponent`` is a rating), and the tournament bodies' player
    fields."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path, item in doc["paths"].items():
        operations = {m: op for m, op in item.items() if isinstance(op, dict)}
        shared = item.get("parameters", [])
        for method, op in operations.items():
            for param in [*shared, *op.get("parameters", [])]:
                if param["name"] in ("player", "opponent") \
                        and param["schema"].get("type") == "string":  # not a rating
                    found.append((f"{method} {path} {param['name']}", param["schema"]))
    schemas = doc["components"]["schemas"]
    if "Registration" in schemas:
        found += [
            ("Registration.player", schemas["Registration"]["properties"]["player"]),
            ("TablesRequest.pairs[][]",
             schemas["TablesRequest"]["properties"]["pairs"]["items"]["items"]),
            ("PodiumRequest.players[]", schemas["PodiumRequest"]["properties"]["players"]["items"]),
        ]
    return found


@pytest.mark.parametrize("name", ["openapi.json", "openapi_tournaments.json"])
def test_every_player_input_carries_the_servers_pattern(name: str) -> None:
    inputs = player_inputs(document(name))
    assert len(inputs) >= 4
    wrong = [where for where, schema in inputs if schema.get("pattern") != PLAYER_ID_PATTERN]
    assert wrong == []


def test_the_account_name_pattern_is_the_account_stores() -> None:
    credentials = document("openapi.json")["components"]["schemas"]["Credentials"]
    assert credentials["properties"]["name"]["pattern"] == f"^{NAME.pattern}$"


def _accepted(check: Any, value: str) -> bool:
    try:
        check(value)
    except ProtocolError:
        return False
    return True


@settings(max_examples=400, deadline=None, database=None, derandomize=True)
@given(st.one_of(st.text(max_size=70), st.from_regex(PLAYER_ID_PATTERN, fullmatch=True)))
def test_the_server_accepts_a_player_id_exactly_when_the_pattern_matches(value: str) -> None:
    # JSON Schema patterns are ECMA regexes; this one means the same in Python's re
    # (ASCII classes, no \d or \w), so Python's answer is the documents' answer.
    expected = re.search(PLAYER_ID_PATTERN, value) is not None and "\n" not in value
    assert _accepted(check_player, value) is expected
    assert _accepted(spec.parse_player, value) is expected

"""A new table's id (server/protocol/ids.py): 12 URL-safe characters, never starting with
"-", so ``python -m server.bot --join <id>`` and the other command lines never take it for an
option (one id in 64 did)."""

from __future__ import annotations

import re

from server.protocol.ids import new_table_id


def test_table_ids_are_url_safe_and_never_start_with_a_dash() -> None:
    ids = [new_table_id() for _ in range(5000)]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{12}", t) for t in ids)
    assert not any(t.startswith("-") for t in ids)
    assert len(set(ids)) == len(ids)
    assert any("-" in t for t in ids)  # the dash stays elsewhere in the alphabet

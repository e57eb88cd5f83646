"""The client library's view of a table (``server/client/catch_up.py``, ``TableView``): how a
``resume`` or ``watching`` moves it (PROTOCOL.md §15)."""

from __future__ import annotations

import pytest

from server.client import TableView


@pytest.mark.parametrize(("served_v", "expected_v", "catch_up"), [
    (9, 9, False),    # the same version: its state is taken
    (12, 9, True),    # the table moved on: a sync catches up, the view waits for it
    (6, 6, False),    # below the view: the table went back (a store failover), taken
])
def test_a_resume_moves_the_view(served_v: int, expected_v: int, catch_up: bool) -> None:
    view = TableView("t1", v=9, state={"v": 9, "seen": "old"})
    state = {"v": served_v, "seen": "served"}
    assert view.served("resume", served_v, state, True) is catch_up
    assert view.v == expected_v and view.seated
    assert view.state == ({"v": 9, "seen": "old"} if catch_up else state)
    # The next event after the served version applies; one at a version seen is dropped.
    assert view.apply({"type": "rolled", "v": expected_v + 1, "state": {"n": 1}}, "p",
                      False)
    assert not view.apply({"type": "rolled", "v": expected_v + 1, "state": {"n": 2}}, "p",
                          False)

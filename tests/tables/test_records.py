"""Finished games' records without I/O (server/tables/records.py)."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from server.tables.records import game_events, game_record, game_row, replay_events, result_name


@pytest.mark.parametrize(("reason", "kind", "result"), [
    ("normal", "single", "single"), ("normal", "gammon", "gammon"),
    ("normal", "backgammon", "backgammon"), ("drop", "single", "single"),
    ("resign", "gammon", "resign"), ("timeout", "single", "timeout"),
    ("disconnect", "single", "forfeit"), ("leave", "single", "forfeit"),
])
def test_result_names(reason: str, kind: str, result: str) -> None:
    assert result_name(reason, kind) == result


def event(v: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "table": "t", "v": v, **fields}


LOG = [
    event(1, "seated"), event(2, "seated"),
    event(3, "game_start", game_id="t-g1", players=["a", "b"], names=["A", "B"],
          state={"game": {"board": [1]}, "n": 0}),
    event(4, "moved", changes={"n": 1}),
    event(4, "moved", changes={"n": 1}),  # stored twice by a retried write
    event(5, "game_over", game_id="t-g1", winner_side=1, changes={"n": 2}),
    event(6, "game_start", game_id="t-g2", players=["a", "b"], state={"n": 10}),
    event(7, "game_over", game_id="t-g2", changes={"n": 11}),
    event(8, "match_over", changes={"n": 12}),
    event(9, "player_disconnected", changes={"n": 13}),
]


def test_a_games_events_are_cut_from_the_log() -> None:
    assert [e["v"] for e in game_events(reversed(LOG), "t-g1")] == [3, 4, 5]
    assert [e["v"] for e in game_events(LOG, "t-g2")] == [6, 7, 8]
    assert game_events(LOG, "t-g3") == []


def test_record_row_and_replay() -> None:
    result = {"game_id": "t-g1", "game_no": 1, "winner": "b", "loser": "a", "winner_side": 1,
              "kind": "gammon", "reason": "normal", "cube": 2, "points": 4,
              "finished_at": 100.0, "rating": {"rated": True}}
    record = game_record(table="t", mode="competitive", match_length=0, tournament_id=None,
                         result=result, players=["a", "b"], names=["A", "B"],
                         events=[msgpack.packb(e) for e in game_events(LOG, "t-g1")],
                         changes={"b": 17, "a": -17}, mat_game="mat", mat_match=None)
    assert (record["players"], record["names"], record["winner"], record["result"]) == (
        ["a", "b"], ["A", "B"], 1, "gammon")
    assert record["changes"] == [-17, 17] and record["points"] == 4 and record["rated"]
    assert game_row(record, "b")["change"] == 17 and "events" not in game_row(record, "b")
    assert game_row(record, "z")["change"] is None
    events = [msgpack.unpackb(e) for e in record["events"]]
    states = [e["state"]["n"] for e in replay_events(events)]
    assert states == [0, 1, 2]
    assert all("changes" not in e for e in replay_events(events))

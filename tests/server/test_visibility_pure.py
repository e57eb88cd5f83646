"""Who may see a game (``server/protocol/visibility.py``, pure), table by table: every kind of
game against every kind of viewer, live and finished; the watchers' channel against a seated
player; the audience kept with a record and a table."""

from __future__ import annotations

import pytest

from server.protocol.chat import PLAYERS, WATCHERS, watcher_sees
from server.protocol.visibility import (
    ANYONE,
    PUBLIC,
    ROOM,
    Audience,
    Reach,
    Viewer,
    audience_of,
    may_see,
    sees_hidden_rows,
)
from server.store.games import ServedMeta
from server.store.record_bytes import ChatStamp, record_body
from server.tables.records import game_record, record_audience

PRIVATE_CUP = Audience(Reach.PRIVATE, "acme")
PLAYERS_OF_GAME = ("alice", "bob")

ALICE = Viewer(player="alice")
CAROL = Viewer(player="carol")
ACME = Viewer(runner="acme")
OTHER_RUNNER = Viewer(runner="club")
ALICE_AS_RUNNER = Viewer(runner="alice")  # a runner named like a player is a runner only
OPERATOR = Viewer(operator=True)

#: (audience, viewer, may see it live, may see it finished)
CASES = [
    (PUBLIC, ANYONE, True, True),
    (PUBLIC, CAROL, True, True),
    (PUBLIC, ACME, True, True),
    (ROOM, ANYONE, True, False),
    (ROOM, CAROL, True, False),
    (ROOM, ALICE, True, True),
    (ROOM, ACME, True, False),
    (ROOM, OPERATOR, True, True),
    (PRIVATE_CUP, ANYONE, False, False),
    (PRIVATE_CUP, CAROL, False, False),
    (PRIVATE_CUP, ALICE, True, True),
    (PRIVATE_CUP, ACME, True, True),
    (PRIVATE_CUP, OTHER_RUNNER, False, False),
    (PRIVATE_CUP, ALICE_AS_RUNNER, False, False),
    (PRIVATE_CUP, OPERATOR, True, True),
    (Audience(Reach.PRIVATE, None), ACME, False, False),  # a runner nobody knows: players only
]


@pytest.mark.parametrize(("audience", "viewer", "live", "finished"), CASES)
def test_who_may_see_a_game(audience: Audience, viewer: Viewer, live: bool,
                            finished: bool) -> None:
    assert may_see(audience, PLAYERS_OF_GAME, viewer, live=True) is live
    assert may_see(audience, PLAYERS_OF_GAME, viewer) is finished


@pytest.mark.parametrize(("mode", "tournament", "expected"), [
    ("competitive", None, PUBLIC),
    ("boosted", None, PUBLIC),
    ("private", None, ROOM),
    ("tournament", {"visibility": "public", "owner": "acme"}, PUBLIC),
    ("tournament", {"visibility": "private", "owner": "acme"}, PRIVATE_CUP),
    ("tournament", {"visibility": "private", "owner": None}, Audience(Reach.PRIVATE)),
])
def test_the_audience_follows_the_table_and_its_tournament(
        mode: str, tournament: dict[str, object] | None, expected: Audience) -> None:
    assert audience_of(mode, tournament) == expected
    assert expected.listed is (expected.reach is Reach.PUBLIC)


def test_hidden_history_rows_are_their_players_own() -> None:
    assert sees_hidden_rows("alice", ALICE)
    assert sees_hidden_rows("alice", OPERATOR)
    for viewer in (ANYONE, CAROL, ACME, ALICE_AS_RUNNER):
        assert not sees_hidden_rows("alice", viewer)


@pytest.mark.parametrize(("channel", "playing", "seated", "receives"), [
    (PLAYERS, True, False, True),
    (WATCHERS, True, False, True),
    (PLAYERS, True, True, True),
    (WATCHERS, True, True, False),  # a seated player's watching socket, during play
    (WATCHERS, False, True, True),  # between games the players hear the watchers
])
def test_a_watching_socket_of_a_seated_player_is_a_players(
        channel: str, playing: bool, seated: bool, receives: bool) -> None:
    assert watcher_sees(channel, playing, seated=seated) is receives


def test_the_audience_round_trips_and_defaults_to_the_mode() -> None:
    for audience in (PUBLIC, ROOM, PRIVATE_CUP):
        assert Audience.from_json(audience.to_json(), mode="competitive") == audience
    assert Audience.from_json(None, mode="private") == ROOM
    assert Audience.from_json(None, mode="tournament") == PUBLIC
    assert Audience.from_json({"reach": "nonsense"}, mode="private") == ROOM


def record(audience: Audience | None, mode: str = "tournament") -> dict[str, object]:
    return game_record(
        table="t", mode=mode, match_length=0, tournament_id="tn0123456789ab",
        result={"game_id": "t-g1", "winner_side": 0, "points": 1, "reason": "leave",
                "kind": "single", "finished_at": 1.0},
        players=["alice", "bob"], names=["alice", "bob"], events=[], changes={},
        mat_game="", mat_match=None, audience=audience)


def test_a_record_keeps_its_audience_out_of_its_answer() -> None:
    kept = record(PRIVATE_CUP)
    assert record_audience(kept) == PRIVATE_CUP
    assert "audience" not in record_body(kept)  # the runner's name is not served
    assert record_audience(record(None, mode="private")) == ROOM
    legacy = {k: v for k, v in record(None, mode="private").items() if k != "audience"}
    assert record_audience(legacy) == ROOM


def test_a_served_meta_carries_the_audience_and_reads_an_older_one() -> None:
    meta = ServedMeta("t-g1", "t", 1, ("alice", "bob"), PRIVATE_CUP, 10, ChatStamp(0, 0))
    assert ServedMeta.decode(meta.encode()) == meta
    older = (b'{"game_id":"t-g1","table":"t","game_no":1,"players":["alice","bob"],'
             b'"private":true,"head_len":10,"chat":[0,0]}')
    assert ServedMeta.decode(older).audience == ROOM
    assert ServedMeta.decode(older.replace(b"true", b"false")).audience == PUBLIC

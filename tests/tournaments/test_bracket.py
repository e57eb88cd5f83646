"""The bracket state machine (pure): seeding, byes, advancement, third place, podium."""

from __future__ import annotations

import pytest

from server.tournaments.bracket import (
    Bracket,
    BracketError,
    Entrant,
    MatchStatus,
    bracket_size,
    build,
    seed_order,
    seeding,
)

NAMES = [f"p{i:02d}" for i in range(1, 17)]


@pytest.mark.parametrize(("size", "order"), [
    (2, [1, 2]),
    (4, [1, 4, 2, 3]),
    (8, [1, 8, 4, 5, 2, 7, 3, 6]),
    (16, [1, 16, 8, 9, 4, 13, 5, 12, 2, 15, 7, 10, 3, 14, 6, 11]),
])
def test_seed_order(size: int, order: list[int]) -> None:
    assert seed_order(size) == order


@pytest.mark.parametrize(("count", "size"), [(2, 2), (3, 4), (4, 4), (5, 8), (9, 16),
                                             (16, 16), (17, 32), (128, 128)])
def test_bracket_size(count: int, size: int) -> None:
    assert bracket_size(count) == size


def test_seeding_by_rating_then_name() -> None:
    entrants = [Entrant("carol", 1500), Entrant("bob", 1500), Entrant("zed", 1620),
                Entrant("amy", 1480, is_new=True)]
    assert [e.player for e in seeding(entrants)] == ["zed", "bob", "carol", "amy"]


@pytest.mark.parametrize(("count", "first_round"), [
    # (seeds, status) of every first-round match
    (2, [((1, 2), "ready")]),
    (3, [((1, None), "bye"), ((2, 3), "ready")]),
    (5, [((1, None), "bye"), ((4, 5), "ready"), ((2, None), "bye"), ((3, None), "bye")]),
    (6, [((1, None), "bye"), ((4, 5), "ready"), ((2, None), "bye"), ((3, 6), "ready")]),
    (8, [((1, 8), "ready"), ((4, 5), "ready"), ((2, 7), "ready"), ((3, 6), "ready")]),
])
def test_first_round_byes_go_to_the_top_seeds(
    count: int, first_round: list[tuple[tuple[int | None, int | None], str]]
) -> None:
    b = build(NAMES[:count], no_show_seconds=60, now=100.0)
    assert [(m.seeds, str(m.status)) for m in b.rounds[0]] == first_round
    for m in b.rounds[0]:
        if m.status is MatchStatus.READY:
            assert m.deadline is None  # no deadline before the pairing went out
            sent = b.paired(m.match, 130.0).get(m.match)
            assert (sent.paired_at, sent.deadline) == (130.0, 190.0)
        if m.status is MatchStatus.BYE:
            assert m.winner == NAMES[(m.seeds[0] or 0) - 1]


def play(b: Bracket, match_id: str, winner_seed: int, now: float = 200.0) -> Bracket:
    b = b.open_table(match_id, f"t-{match_id}")
    b = b.record_result(match_id, NAMES[winner_seed - 1])
    return b.resolve(now)


def test_five_players_to_the_podium() -> None:
    b = build(NAMES[:5], no_show_seconds=60, now=0.0)
    # Round 2 waits for 4 v 5; 2 v 3 is ready at once (both had byes).
    r2 = b.rounds[1]
    assert (r2[0].players, str(r2[0].status)) == (("p01", None), "pending")
    assert (r2[1].players, str(r2[1].status)) == (("p02", "p03"), "ready")
    b = play(b, "r1m2", 5)
    assert b.rounds[1][0].players == ("p01", "p05")
    assert b.rounds[1][0].seeds == (1, 5)
    b = play(b, "r2m1", 1)
    assert b.third_place is not None and b.third_place.players == ("p05", None)
    b = b.no_show("r2m2", ["p03"])  # seed 3 never came
    b = b.resolve(300.0)
    assert b.get("r2m2").status is MatchStatus.FORFEIT
    assert b.final.players == ("p01", "p02")
    assert b.third_place is not None and b.third_place.players == ("p05", "p03")
    assert b.podium is None
    b = play(b, "r3m1", 2)
    assert b.podium is None  # third place still to play
    b = b.no_show("third", ["p03"]).resolve(400.0)
    assert b.podium == ("p02", "p01", "p05")
    assert b.is_over


def test_two_players_have_no_third_place() -> None:
    b = build(NAMES[:2], no_show_seconds=10, now=0.0)
    assert b.third_place is None
    b = play(b, "r1m1", 2)
    assert b.podium == ("p02", "p01")


def test_three_players_third_place_is_a_bye() -> None:
    b = build(NAMES[:3], no_show_seconds=10, now=0.0)
    b = play(b, "r1m2", 3)
    assert b.third_place is not None
    assert b.third_place.status is MatchStatus.BYE and b.third_place.winner == "p02"
    b = play(b, "r2m1", 3)
    assert b.podium == ("p03", "p01", "p02")


def test_both_absent_the_better_seed_goes_through() -> None:
    b = build(NAMES[:4], no_show_seconds=10, now=0.0)
    b = b.no_show("r1m1", ["p01", "p04"]).resolve(20.0)
    assert b.get("r1m1").winner == "p01"


def test_a_lost_table_is_ready_again() -> None:
    b = build(NAMES[:2], no_show_seconds=10, now=0.0)
    b = b.open_table("r1m1", "t1").table_lost("r1m1", 50.0)
    m = b.get("r1m1")
    assert (m.status, m.table, m.deadline, m.tables) == (MatchStatus.READY, None, 60.0, ("t1",))
    b = b.open_table("r1m1", "t2")
    assert b.get("r1m1").tables == ("t1", "t2")


def test_the_no_show_deadline_counts_from_the_pairing() -> None:
    b = build(NAMES[:2], no_show_seconds=10, now=0.0)
    assert b.get("r1m1").deadline is None
    b = b.paired("r1m1", 45.0)
    assert Bracket.from_dict(b.to_dict()).get("r1m1").deadline == 55.0
    with pytest.raises(BracketError):
        b.open_table("r1m1", "t").paired("r1m1", 50.0)  # playing, not ready


def test_refused_changes() -> None:
    b = build(NAMES[:4], no_show_seconds=10, now=0.0)
    with pytest.raises(BracketError):
        b.record_result("r1m1", "p01")  # not playing
    b = b.open_table("r1m1", "t")
    with pytest.raises(BracketError):
        b.record_result("r1m1", "p02")  # not in this match
    with pytest.raises(BracketError):
        b.get("r9m9")
    with pytest.raises(BracketError):
        build(["a"], no_show_seconds=1, now=0)
    with pytest.raises(BracketError):
        build(["a", "a"], no_show_seconds=1, now=0)


@pytest.mark.parametrize("count", [2, 3, 5, 7, 8, 13, 16])
def test_round_trip_and_full_run(count: int) -> None:
    b = build(NAMES[:count], no_show_seconds=5, now=0.0)
    assert Bracket.from_dict(b.to_dict()) == b
    for _ in range(64):  # every ready match won by the better seed
        ready = [m for m in b.matches() if m.status is MatchStatus.READY]
        if not ready:
            break
        for m in ready:
            better = min(p for p in m.players if p is not None)
            b = b.open_table(m.match, "t").record_result(m.match, better)
        b = b.resolve(1.0)
        assert Bracket.from_dict(b.to_dict()) == b
    assert b.podium is not None
    assert b.podium[:2] == ("p01", "p02")
    if count >= 3:
        assert b.podium[2] == "p03"

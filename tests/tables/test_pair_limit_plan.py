"""The pair limit in the pure rating decision: only a game that would be rated is counted,
and a refused one is unrated with ``pair_limit`` (after the reasons that come first)."""

from __future__ import annotations

from server.protocol.messages import TableMode
from server.tables.ratings import RatedPlayer, counts_for_pair_limit, plan_rating

ANN = RatedPlayer("ann", False, "203.0.113.5")
BOB = RatedPlayer("bob", False, "198.51.100.9")
GUEST = RatedPlayer("guest-0123456789", True, "192.0.2.1")


def test_a_refused_competitive_game_or_match_is_unrated_pair_limit() -> None:
    for length in (0, 5):
        plan = plan_rating(TableMode.COMPETITIVE, length, (ANN, BOB), pair_limited=True)
        assert plan.to_dict() == {"rated": False, "ladder": None, "boosted": False,
                                  "unrated_reason": "pair_limit"}
    assert plan_rating(TableMode.COMPETITIVE, 0, (ANN, BOB)).ladder == "table42"


def test_only_games_that_would_be_rated_count() -> None:
    assert counts_for_pair_limit(TableMode.COMPETITIVE, 0, (ANN, BOB))
    assert counts_for_pair_limit(TableMode.COMPETITIVE, 3, (ANN, BOB))
    assert not counts_for_pair_limit(TableMode.COMPETITIVE, 0, (ANN, GUEST))
    assert not counts_for_pair_limit(TableMode.BOOSTED, 0, (ANN, BOB))
    assert not counts_for_pair_limit(TableMode.PRIVATE, 0, (ANN, BOB))
    assert not counts_for_pair_limit(TableMode.TOURNAMENT, 0, (ANN, BOB))
    same = RatedPlayer("bob", False, "203.0.113.5")
    assert not counts_for_pair_limit(TableMode.COMPETITIVE, 0, (ANN, same))


def test_earlier_reasons_come_first() -> None:
    assert plan_rating(TableMode.COMPETITIVE, 0, (ANN, GUEST),
                       pair_limited=True).unrated_reason == "guest_player"
    assert plan_rating(TableMode.BOOSTED, 0, (ANN, BOB),
                       pair_limited=True).unrated_reason == "boosted_mode"

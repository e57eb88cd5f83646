"""The "match found" message: opponent, ratings as shown, and the stake preview (pure)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from server.matchmaking import (
    SAME_NETWORK,
    Pairing,
    Ticket,
    pairing_note,
    pool_by_id,
    ticket_status,
)
from server.matchmaking.messages import (
    expired_message,
    match_found_messages,
    overview,
    rating_shown,
    stake_preview,
    status_message,
)

T = 1_700_000_000.0


def ticket(player: str, rating: float, pool: str = "competitive", **kwargs: object) -> Ticket:
    return Ticket(player, pool, rating, T, f"10.0.0.{len(player)}", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mine", "theirs", "win", "loss", "their_win", "their_loss"),
    [
        # Table42 Elo examples, K=32 cube 1: 300 apart the underdog wins +20 or loses -12
        (ticket("a", 1500), ticket("b", 1800), 20, -12, 12, -20),
        (ticket("a", 1500), ticket("b", 1500), 16, -16, 16, -16),
        # mixed K: 60 games this week (K=16) against a K=32 opponent at equal ratings
        (ticket("a", 1500, recent_games=60), ticket("b", 1500, recent_games=10), 8, -8, 16, -16),
        (ticket("a", 1650, recent_games=49), ticket("b", 1500), 14, -18, 18, -14),
    ],
)
def test_table42_stakes(
    mine: Ticket, theirs: Ticket, win: int, loss: int, their_win: int, their_loss: int
) -> None:
    preview = stake_preview(mine, theirs)
    assert preview is not None
    assert (preview.player.win, preview.player.loss) == (win, loss)
    assert (preview.opponent.win, preview.opponent.loss) == (their_win, their_loss)


@pytest.mark.parametrize(
    ("pool", "experience", "win"),
    [
        ("match-1", 150, 7.0),  # FIBS examples: multiplier 3.5 -> +7.00
        ("match-1", 400, 2.0),
        ("match-1", None, 10.0),  # unknown experience counts as 0: multiplier 5
    ],
)
def test_fibs_stakes(pool: str, experience: int | None, win: float) -> None:
    preview = stake_preview(
        ticket("a", 1500, pool, experience=experience), ticket("b", 1500, pool, experience=400)
    )
    assert preview is not None and preview.player.win == pytest.approx(win)
    assert preview.match_length == 1


def test_boosted_has_no_stakes() -> None:
    assert stake_preview(ticket("a", 1500, "boosted"), ticket("b", 1900, "boosted")) is None


@pytest.mark.parametrize(
    ("t", "shown"),
    [
        (ticket("a", 1523), "1523"),
        (ticket("a", 1522.5), "1523"),
        (ticket("a", 1523.375, "match-3"), "1523.38"),
        (ticket("a", 1523.365, "match-3", is_new=True), "new"),
        (ticket("a", 1500, "boosted", is_guest=True), "guest"),
    ],
)
def test_rating_shown(t: Ticket, shown: str) -> None:
    assert rating_shown(t) == shown


def test_messages_for_both_players() -> None:
    ann = Ticket("ann", "match-3", 1523.37, T - 12.5, "1.1.1.1", name="Ann", experience=40)
    bob = Ticket("bob", "match-3", 1500.0, T - 3, "2.2.2.2", is_new=True, experience=2)
    messages = match_found_messages(Pairing(bob, ann), table="kB9", now=T)
    assert set(messages) == {"ann", "bob"}
    to_ann = messages["ann"]
    assert to_ann["type"] == "match_found"
    assert (to_ann["pool"], to_ann["mode"], to_ann["ladder"], to_ann["rated"]) == (
        "match-3",
        "rated_match",
        "fibs",
        True,
    )
    assert (to_ann["match_length"], to_ann["table"], to_ann["waited"]) == (3, "kB9", 12.5)
    assert to_ann["you"] == {"player": "ann", "name": "Ann", "rating": 1523.37,
                             "rating_shown": "1523.37"}
    assert to_ann["opponent"] == {"player": "bob", "name": "bob", "rating": 1500.0,
                                  "rating_shown": "new"}
    assert to_ann["stakes"]["player"]["rating"] == 1523.37
    assert to_ann["stakes"]["player"]["win"] == messages["bob"]["stakes"]["opponent"]["win"]
    assert messages["bob"]["waited"] == 3
    json.dumps(messages, allow_nan=False)


def test_boosted_message() -> None:
    messages = match_found_messages(
        Pairing(ticket("a", 1500, "boosted"), ticket("g", 1500, "boosted", is_guest=True))
    )
    assert messages["a"]["rated"] is False and messages["a"]["ladder"] is None
    assert messages["a"]["stakes"] is None and "table" not in messages["a"]
    assert messages["a"]["opponent"]["rating_shown"] == "guest"


def test_status_messages() -> None:
    ann = Ticket("ann", "competitive", 1500, T - 12, "1.1.1.1")
    status = ticket_status(ann, T)
    assert status_message(status) == {
        "type": "queue_status",
        "pool": "competitive",
        "waited": 12,
        "window": 170,
        "window_cap": 400,
        "seconds_to_cap": 23,
        "rating": 1500,
        "note": None,
    }
    queued = status_message(status, kind="queued", replaced_pool="boosted")
    assert (queued["type"], queued["replaced_pool"]) == ("queued", "boosted")
    assert expired_message(ann, T + 100) == {
        "type": "queue_expired",
        "pool": "competitive",
        "waited": 112,
    }


def test_the_note_says_when_only_ones_own_network_waits() -> None:
    ann = Ticket("ann", "competitive", 1500, T, "2001:db8:1:2::10")
    bob = Ticket("bob", "competitive", 1900, T, "2001:db8:1:2::20")  # the same /64
    cat = Ticket("cat", "competitive", 1500, T, "203.0.113.5")
    guest = Ticket("gus", "competitive", 1500, T, "203.0.113.6", is_guest=True)
    rated, boosted = pool_by_id("competitive"), pool_by_id("boosted")
    assert pairing_note(rated, ann, [ann]) is None  # alone: nothing to explain
    assert pairing_note(rated, ann, [ann, bob]) == SAME_NETWORK == "same_network"
    assert pairing_note(rated, ann, [ann, bob, guest]) == SAME_NETWORK  # never pairs anyway
    assert pairing_note(rated, ann, [ann, bob, cat]) is None
    assert pairing_note(boosted, replace(ann, pool="boosted"),
                        [replace(bob, pool="boosted")]) is None
    status = ticket_status(bob, T)
    assert status_message(status, note=SAME_NETWORK)["note"] == "same_network"


def test_overview() -> None:
    view = overview({"competitive": 3, "match-5": 1})
    assert [(p["pool"], p["waiting"]) for p in view["pools"]] == [
        ("competitive", 3),
        ("match-1", 0),
        ("match-3", 0),
        ("match-5", 1),
        ("match-7", 0),
        ("boosted", 0),
    ]
    assert view["pools"][-1] == {
        "pool": "boosted",
        "title": "Boosted single game (unrated)",
        "mode": "boosted",
        "ladder": "table42",
        "rated": False,
        "match_length": 1,
        "waiting": 0,
    }
    assert view["window"] == {"base": 50, "rate": 10, "cap": 400, "seconds_to_cap": 35}
    json.dumps(view, allow_nan=False)


def test_a_game_the_pair_limit_refuses_is_announced_unrated() -> None:
    pair = Pairing(ticket("a", 1500, "competitive"), ticket("b", 1510, "competitive"))
    rated = match_found_messages(pair)
    assert (rated["a"]["rated"], rated["a"]["unrated_reason"]) == (True, None)
    limited = match_found_messages(pair, unrated_reason="pair_limit")
    for message in limited.values():
        assert (message["rated"], message["unrated_reason"], message["ladder"],
                message["stakes"]) == (False, "pair_limit", None, None)
    boosted = match_found_messages(Pairing(ticket("a", 1500, "boosted"),
                                           ticket("b", 1500, "boosted")))
    assert boosted["a"]["unrated_reason"] == "boosted_mode"

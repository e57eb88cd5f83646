"""Matchmaking policy: pools, the window curve, the rules and the pairing pass (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.matchmaking import (
    DEFAULT_SETTINGS,
    POOLS,
    GameMode,
    GuestNotAllowedError,
    InRankedGameError,
    InvalidTicketError,
    MatchmakingSettings,
    PassPlan,
    Pool,
    Ticket,
    UnknownPoolError,
    acceptable,
    admit,
    plan_pass,
    pool_by_id,
    ticket_status,
    wait_for_gap,
    window,
)
from server.matchmaking.errors import ERROR_CODES
from server.protocol.ids import network_key

NOW = 1_000_000.0
COMPETITIVE = pool_by_id("competitive")
MATCH_3 = pool_by_id("match-3")
BOOSTED = pool_by_id("boosted")


def ticket(
    player: str,
    rating: float,
    *,
    waited: float = 0.0,
    pool: str = "competitive",
    address: str | None = None,
    is_guest: bool = False,
    is_new: bool = False,
) -> Ticket:
    return Ticket(
        player=player,
        pool=pool,
        rating=rating,
        queued_at=NOW - waited,
        address=address if address is not None else f"addr-{player}",
        is_guest=is_guest,
        is_new=is_new,
    )


def paired_names(plan: PassPlan) -> list[tuple[str, str]]:
    return [pair.players for pair in plan.pairs]


# --- pools ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool_id", "mode", "ladder", "length", "rated"),
    [
        ("competitive", GameMode.COMPETITIVE, "table42", 1, True),
        ("match-1", GameMode.RATED_MATCH, "fibs", 1, True),
        ("match-3", GameMode.RATED_MATCH, "fibs", 3, True),
        ("match-5", GameMode.RATED_MATCH, "fibs", 5, True),
        ("match-7", GameMode.RATED_MATCH, "fibs", 7, True),
        ("boosted", GameMode.BOOSTED, "table42", 1, False),
    ],
)
def test_pools(pool_id: str, mode: GameMode, ladder: str, length: int, rated: bool) -> None:
    pool = pool_by_id(pool_id)
    assert (pool.mode, pool.ladder, pool.match_length, pool.is_rated) == (
        mode,
        ladder,
        length,
        rated,
    )


def test_pool_ids_are_unique_and_complete() -> None:
    assert [pool.id for pool in POOLS] == [
        "competitive",
        "match-1",
        "match-3",
        "match-5",
        "match-7",
        "boosted",
    ]


@pytest.mark.parametrize("pool_id", ["", "ranked", "match-2", "Competitive", None, 3])
def test_unknown_pool(pool_id: object) -> None:
    with pytest.raises(UnknownPoolError) as caught:
        pool_by_id(pool_id)
    assert caught.value.code == "unknown_pool"
    assert caught.value.field == "pool"


# --- admission -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool_id", "is_guest", "in_ranked_game", "error"),
    [
        ("competitive", False, False, None),
        ("match-5", False, False, None),
        ("boosted", True, False, None),
        ("competitive", True, False, GuestNotAllowedError),
        ("match-1", True, False, GuestNotAllowedError),
        ("match-7", True, False, GuestNotAllowedError),
        ("competitive", False, True, InRankedGameError),
        ("boosted", False, True, InRankedGameError),
        ("nope", True, True, UnknownPoolError),
    ],
)
def test_admit(
    pool_id: str, is_guest: bool, in_ranked_game: bool, error: type[Exception] | None
) -> None:
    if error is None:
        assert admit(pool_id, is_guest=is_guest, in_ranked_game=in_ranked_game).id == pool_id
    else:
        with pytest.raises(error):
            admit(pool_id, is_guest=is_guest, in_ranked_game=in_ranked_game)


def test_error_codes_are_stable() -> None:
    assert ERROR_CODES == (
        "matchmaking_error",
        "unknown_pool",
        "guest_not_allowed",
        "in_ranked_game",
        "invalid_ticket",
        "not_queued",
        "queue_full",
    )
    assert GuestNotAllowedError("x").code == "guest_not_allowed"
    assert InRankedGameError("x").code == "in_ranked_game"
    assert issubclass(UnknownPoolError, ValueError)


# --- tickets -------------------------------------------------------------------------------

GOOD = {
    "player": "ann",
    "pool": "competitive",
    "rating": 1500,
    "queued_at": 1.0,
    "address": "1.2.3.4",
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"player": ""}, "player"),
        ({"player": "x" * 65}, "player"),
        ({"player": "a\nb"}, "player"),
        ({"player": 7}, "player"),
        ({"rating": float("nan")}, "rating"),
        ({"rating": float("inf")}, "rating"),
        ({"rating": 2e6}, "rating"),
        ({"rating": "1500"}, "rating"),
        ({"rating": True}, "rating"),
        ({"queued_at": -1.0}, "queued_at"),
        ({"queued_at": float("nan")}, "queued_at"),
        ({"address": ""}, "address"),
        ({"address": "a" * 129}, "address"),
        ({"is_guest": 1}, "is_guest"),
        ({"is_new": "yes"}, "is_new"),
        ({"node": "n" * 65}, "node"),
        ({"ticket_id": "t" * 65}, "ticket_id"),
        ({"name": "n" * 65}, "name"),
        ({"experience": -1}, "experience"),
        ({"experience": 1.5}, "experience"),
        ({"recent_games": True}, "recent_games"),
    ],
)
def test_ticket_rejects_bad_fields(change: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidTicketError) as caught:
        Ticket(**{**GOOD, **change})  # type: ignore[arg-type]
    assert caught.value.field == field
    assert caught.value.code == "invalid_ticket"
    assert str(caught.value).startswith(field)


def test_ticket_rejects_unknown_pool() -> None:
    with pytest.raises(UnknownPoolError):
        Ticket(**{**GOOD, "pool": "chess"})  # type: ignore[arg-type]


# --- window curve --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("waited", "expected"),
    [(-5.0, 50.0), (0.0, 50.0), (1.0, 60.0), (5.0, 100.0), (15.0, 200.0), (35.0, 400.0),
     (36.0, 400.0), (3600.0, 400.0)],
)
def test_default_window_curve(waited: float, expected: float) -> None:
    assert window(waited) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("gap", "expected"),
    [(0.0, 0.0), (50.0, 0.0), (-100.0, 5.0), (100.0, 5.0), (200.0, 15.0), (400.0, 35.0),
     (400.5, None)],
)
def test_wait_for_gap(gap: float, expected: float | None) -> None:
    assert wait_for_gap(gap) == (None if expected is None else pytest.approx(expected))


def test_custom_curve() -> None:
    custom = MatchmakingSettings(window_base=20, window_rate=2, window_cap=100)
    assert [window(w, custom) for w in (0, 10, 40, 41)] == [20, 40, 100, 100]
    assert custom.seconds_to_cap == 40
    assert wait_for_gap(60, custom) == 20


def test_ticket_status() -> None:
    status = ticket_status(ticket("ann", 1500, waited=10), NOW)
    assert (status.waited, status.window, status.seconds_to_cap) == (10, 150, 25)
    future = ticket_status(replace(ticket("ann", 1500), queued_at=NOW + 3), NOW)
    assert (future.waited, future.window) == (0, 50)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window_base": -1},
        {"window_rate": float("nan")},
        {"window_cap": 10},
        {"ticket_ttl": 0},
        {"scan_limit": 0},
        {"ipv6_prefix": 129},
    ],
)
def test_settings_validation(kwargs: dict[str, object]) -> None:
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        MatchmakingSettings(**kwargs)  # type: ignore[arg-type]


# --- network addresses ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("203.0.113.7", "203.0.113.7"),
        (" 203.0.113.7 ", "203.0.113.7"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2:ffff::9", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("Proxy-Client-7", "proxy-client-7"),
    ],
)
def test_network_key(address: str, key: str) -> None:
    assert network_key(address) == key


def test_network_key_prefix_is_configurable() -> None:
    assert network_key("2001:db8:1:2::1", ipv6_prefix=128) == "2001:db8:1:2::1/128"


# --- compatibility rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool", "a", "b", "expected"),
    [
        (COMPETITIVE, ticket("ann", 1500), ticket("bob", 1550), True),
        (COMPETITIVE, ticket("ann", 1500), ticket("bob", 1551), False),
        (COMPETITIVE, ticket("ann", 1500), replace(ticket("ann", 1500), address="x"), False),
        (COMPETITIVE, ticket("ann", 1500, address="1.1.1.1"),
         ticket("bob", 1500, address="1.1.1.1"), False),
        (COMPETITIVE, ticket("ann", 1500, address="2001:db8::1"),
         ticket("bob", 1500, address="2001:db8::2"), False),
        (BOOSTED, ticket("ann", 1500, pool="boosted", address="1.1.1.1"),
         ticket("bob", 1500, pool="boosted", address="1.1.1.1"), True),
        (COMPETITIVE, ticket("ann", 1500), ticket("bob", 1500, is_guest=True), False),
        (MATCH_3, ticket("ann", 1500, pool="match-3"),
         ticket("bob", 1500, pool="match-3", is_guest=True), False),
        (BOOSTED, ticket("ann", 1500, pool="boosted"),
         ticket("bob", 1500, pool="boosted", is_guest=True), True),
        # both windows must cover the gap: 300 needs 25 s from each side
        (COMPETITIVE, ticket("ann", 1500, waited=60), ticket("bob", 1800, waited=24), False),
        (COMPETITIVE, ticket("ann", 1500, waited=60), ticket("bob", 1800, waited=25), True),
        (COMPETITIVE, ticket("ann", 1500, waited=600), ticket("bob", 1901, waited=600), False),
        # a FIBS "new" player may pair with anyone...
        (MATCH_3, ticket("ann", 1500, pool="match-3", is_new=True),
         ticket("bob", 2200, pool="match-3"), True),
        (MATCH_3, ticket("ann", 2200, pool="match-3"),
         ticket("bob", 1500, pool="match-3", is_new=True), True),
        # ...but not from the same network, and "new" means nothing on the Table42 ladder
        (MATCH_3, ticket("ann", 1500, pool="match-3", is_new=True, address="1.1.1.1"),
         ticket("bob", 2200, pool="match-3", address="1.1.1.1"), False),
        (COMPETITIVE, ticket("ann", 1500, is_new=True), ticket("bob", 2200), False),
    ],
)
def test_acceptable(pool: Pool, a: Ticket, b: Ticket, expected: bool) -> None:
    assert acceptable(pool, a, b, NOW) is expected
    assert acceptable(pool, b, a, NOW) is expected


def test_new_player_waiver_can_be_switched_off() -> None:
    strict = MatchmakingSettings(new_players_pair_anyone=False)
    a = ticket("ann", 1500, pool="match-3", is_new=True)
    b = ticket("bob", 2200, pool="match-3")
    assert not acceptable(MATCH_3, a, b, NOW, strict)
    assert plan_pass(MATCH_3, [a, b], NOW, strict).pairs == ()


# --- pairing pass --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "pool", "tickets", "pairs", "waiting"),
    [
        ("empty", COMPETITIVE, [], [], 0),
        ("alone", COMPETITIVE, [ticket("a", 1500)], [], 1),
        (
            "closest first",
            COMPETITIVE,
            [ticket("a", 1500), ticket("b", 1530), ticket("c", 1535), ticket("d", 1580)],
            [("b", "c")],  # a-d is 80 apart, beyond both 50-point windows
            2,
        ),
        (
            "closest first then the rest",
            COMPETITIVE,
            [ticket("a", 1500, waited=5), ticket("b", 1530), ticket("c", 1535),
             ticket("d", 1580, waited=5)],
            [("b", "c"), ("a", "d")],  # a-d is 80 apart, inside both 100-point windows
            0,
        ),
        (
            "closest first even when that leaves two to wait for a wider window",
            COMPETITIVE,
            [ticket("a", 1500), ticket("b", 1520), ticket("c", 1530), ticket("d", 1560)],
            [("b", "c")],
            2,
        ),
        (
            "distant ratings wait for both windows",
            COMPETITIVE,
            [ticket("a", 1500, waited=100), ticket("b", 1800, waited=10)],
            [],
            2,
        ),
        (
            "same network skips to the next neighbour",
            COMPETITIVE,
            [ticket("a", 1500, address="9.9.9.9"), ticket("b", 1501, address="9.9.9.9"),
             ticket("c", 1502)],
            [("b", "c")],
            1,
        ),
        (
            "same network is fine in boosted",
            BOOSTED,
            [ticket("a", 1500, pool="boosted", address="9.9.9.9"),
             ticket("b", 1501, pool="boosted", address="9.9.9.9")],
            [("a", "b")],
            0,
        ),
        (
            "guests never pair in rated pools",
            COMPETITIVE,
            [ticket("a", 1500, is_guest=True), ticket("b", 1500)],
            [],
            1,
        ),
        (
            "a new FIBS player pairs with the closest, however far",
            MATCH_3,
            [ticket("a", 1500, pool="match-3", is_new=True),
             ticket("b", 2100, pool="match-3"), ticket("c", 2300, pool="match-3")],
            [("a", "b")],
            1,
        ),
        (
            "a new FIBS player found from above",
            MATCH_3,
            [ticket("a", 900, pool="match-3"), ticket("b", 1500, pool="match-3", is_new=True)],
            [("a", "b")],
            0,
        ),
    ],
)
def test_pairing_pass(
    name: str,
    pool: Pool,
    tickets: list[Ticket],
    pairs: list[tuple[str, str]],
    waiting: int,
) -> None:
    plan = plan_pass(pool, tickets, NOW)
    assert paired_names(plan) == pairs, name
    assert plan.waiting == waiting, name


def test_widening_pairs_only_after_the_documented_wait() -> None:
    gap = 250.0
    needed = wait_for_gap(gap)
    assert needed == 20.0
    a = ticket("a", 1500)
    b = ticket("b", 1500 + gap)
    assert plan_pass(COMPETITIVE, [a, b], NOW + needed - 0.01).pairs == ()
    assert paired_names(plan_pass(COMPETITIVE, [a, b], NOW + needed)) == [("a", "b")]


def test_duplicate_player_tickets_count_once() -> None:
    old = replace(ticket("a", 1500, waited=30), ticket_id="old")
    new = replace(ticket("a", 1500, waited=1), ticket_id="new")
    plan = plan_pass(COMPETITIVE, [old, new, ticket("b", 1510)], NOW)
    assert paired_names(plan) == [("a", "b")]
    assert plan.pairs[0].first.ticket_id == "new"
    assert plan.rejected == (old,)


def test_expired_tickets_leave_the_pass() -> None:
    stale = ticket("a", 1500, waited=DEFAULT_SETTINGS.ticket_ttl + 1)  # type: ignore[operator]
    plan = plan_pass(COMPETITIVE, [stale, ticket("b", 1500)], NOW)
    assert plan.pairs == ()
    assert plan.expired == (stale,)
    assert plan.waiting == 1


def test_tickets_of_another_pool_are_refused() -> None:
    with pytest.raises(ValueError, match="pool"):
        plan_pass(COMPETITIVE, [ticket("a", 1500, pool="boosted")], NOW)


def test_scan_limit_bounds_work_and_is_reported() -> None:
    crowd = [ticket(f"p{i}", 1500 + i / 10, address="7.7.7.7") for i in range(20)]
    loner = ticket("z", 1510)
    tight = MatchmakingSettings(scan_limit=4)
    plan = plan_pass(COMPETITIVE, [*crowd, loner], NOW, tight)
    assert plan.scan_exhausted > 0
    loose = plan_pass(COMPETITIVE, [*crowd, loner], NOW)
    assert len(loose.pairs) == 1 and "z" in loose.pairs[0].players


def test_pairs_are_lower_rating_first() -> None:
    plan = plan_pass(COMPETITIVE, [ticket("hi", 1540), ticket("lo", 1500)], NOW)
    assert plan.pairs[0].first.player == "lo"
    assert plan.pairs[0].gap == 40


# --- properties ----------------------------------------------------------------------------

ADDRESSES = ["1.1.1.1", "2.2.2.2", "3.3.3.3", "2001:db8::1", "2001:db8::2", "4.4.4.4"]


@st.composite
def pools_and_tickets(draw: st.DrawFn) -> tuple[Pool, list[Ticket]]:
    pool = draw(st.sampled_from(POOLS))
    count = draw(st.integers(0, 30))
    tickets = []
    for index in range(count):
        tickets.append(
            Ticket(
                player=f"p{draw(st.integers(0, 24))}",
                pool=pool.id,
                rating=draw(
                    st.one_of(
                        st.integers(1200, 1800),
                        st.floats(1000, 2000, allow_nan=False, allow_infinity=False),
                    )
                ),
                queued_at=NOW - draw(st.floats(0, 60)),
                address=draw(st.sampled_from(ADDRESSES)),
                is_guest=draw(st.booleans()),
                is_new=draw(st.booleans()),
                ticket_id=f"t{index}",
            )
        )
    return pool, tickets


def live_tickets(tickets: list[Ticket], plan: PassPlan) -> list[Ticket]:
    dropped = {id(t) for t in (*plan.rejected, *plan.expired)}
    return [t for t in tickets if id(t) not in dropped]


@settings(max_examples=300, deadline=None)
@given(pools_and_tickets(), st.integers(1, 64))
def test_pass_properties(case: tuple[Pool, list[Ticket]], scan_limit: int) -> None:
    pool, tickets = case
    rules = MatchmakingSettings(scan_limit=scan_limit)
    plan = plan_pass(pool, tickets, NOW, rules)
    seen: set[str] = set()
    for pair in plan.pairs:
        a, b = pair.first, pair.second
        assert a.player != b.player  # no self pairs
        assert a.player not in seen and b.player not in seen  # no one paired twice
        seen.update(pair.players)
        assert a.rating <= b.rating
        assert acceptable(pool, a, b, NOW, rules)  # within windows, no rule broken
        if pool.is_rated:
            assert not a.is_guest and not b.is_guest
            assert network_key(a.address) != network_key(b.address)
    live = live_tickets(tickets, plan)
    assert len({t.player for t in live}) == len(live)
    assert plan.waiting == len(live) - 2 * len(plan.pairs)


@settings(max_examples=300, deadline=None)
@given(pools_and_tickets())
def test_pass_is_greedy_by_gap_and_maximal(case: tuple[Pool, list[Ticket]]) -> None:
    """With an unlimited scan, each pair had the smallest gap of all pairs still possible
    when it was chosen, and no possible pair is left over."""
    pool, tickets = case
    rules = MatchmakingSettings(scan_limit=10**9)
    plan = plan_pass(pool, tickets, NOW, rules)
    assert plan.scan_exhausted == 0
    free = {t.player: t for t in live_tickets(tickets, plan)}
    people = list(free.values())
    possible = [
        (abs(a.rating - b.rating), a.player, b.player)
        for i, a in enumerate(people)
        for b in people[i + 1 :]
        if acceptable(pool, a, b, NOW, rules)
    ]

    def smallest_gap() -> float | None:
        gaps = [gap for gap, a, b in possible if a in free and b in free]
        return min(gaps) if gaps else None

    for pair in plan.pairs:
        best = smallest_gap()
        assert best is not None
        assert pair.gap <= best + 1e-9
        del free[pair.first.player], free[pair.second.player]
    assert smallest_gap() is None


def test_the_pure_parts_import_no_io() -> None:
    import subprocess
    import sys

    code = (
        "import sys, server.matchmaking, server.matchmaking.policy, server.matchmaking.messages;"
        "print(sorted(m for m in ('asyncio', 'aiohttp', 'redis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

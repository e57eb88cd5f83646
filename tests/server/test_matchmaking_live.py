"""Lobby matchmaking on live servers: two nodes on one Redis, real WebSocket clients.

Pairing runs on a fast clock here (a pass every 0.1 s); tests that need to know exactly when a
pass happens slow the loop down and run passes themselves through the node's matchmaker
(``on_pass(await queue.pair_unleased(pool))`` is what the loop does, minus the lease).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from server_helpers import (
    Client,
    RunningServer,
    StartServer,
    connect,
    guest,
    register,
    scripted,
    seat_two,
)

from rating_plugin import stakes
from rating_plugin.store import RatingStore
from server.app import MATCHMAKER
from server.lobby.matchmaker import Matchmaker
from server.matchmaking import Ticket, acceptable, pool_by_id, wait_for_gap
from server.protocol.ids import network_key
from server.protocol.messages import TableMode
from server.store.queue import MatchmakingQueue
from server.tables.ratings import RatedPlayer, plan_rating, same_network

FAST = {"matchmaking_pass_interval": 0.1, "matchmaking_hold": 0.05}
MANUAL = {"matchmaking_pass_interval": 3600.0}  # only the passes a test runs itself
WAIT = 10.0


def matchmaker(server: RunningServer) -> Matchmaker:
    return server.app[MATCHMAKER]


async def run_pass(server: RunningServer, pool: str) -> int:
    """One pass over ``pool`` on ``server``, handled like the loop does; pairs claimed."""
    mm = matchmaker(server)
    result = await mm.queue.pair_unleased(pool)
    await mm.on_pass(result)
    return len(result.pairs)


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = WAIT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def player(server: RunningServer, name: str, address: str | None = None,
                 *, binary: bool = False) -> Client:
    return await connect(server, await register(server, name), address=address, binary=binary)


def index_of(client: Client, kind: str, **match: Any) -> int:
    for i, message in enumerate(client.messages):
        if message.get("type") == kind and all(message.get(k) == v for k, v in match.items()):
            return i
    raise AssertionError(f"no {kind} {match} in {client.messages}")


# --- pure: one same-network rule for pairing and rating --------------------------------------

ADDRESS_PAIRS = [
    ("203.0.113.5", "203.0.113.5", True),
    ("203.0.113.5", "203.0.113.6", False),
    ("::ffff:203.0.113.5", "203.0.113.5", True),
    ("::ffff:cb00:7105", "203.0.113.5", True),
    ("2001:db8:1:2::10", "2001:db8:1:2:ffff::20", True),
    ("2001:db8:1:2::10", "2001:db8:1:3::10", False),
    ("2001:DB8:1:2::10", "2001:db8:1:2::10", True),
    ("fe80::1%eth0", "fe80::2", True),
    ("unknown-ann", "unknown-bob", False),
]


@pytest.mark.parametrize(("a", "b", "same"), ADDRESS_PAIRS)
def test_rating_and_matchmaking_agree_on_same_network(a: str, b: str, same: bool) -> None:
    assert same_network(a, b) is same
    assert (network_key(a) == network_key(b)) is same
    plan = plan_rating(TableMode.COMPETITIVE, 0,
                       (RatedPlayer("ann", False, a), RatedPlayer("bob", False, b)))
    assert (plan.unrated_reason == "same_address") is same
    ticket_a = Ticket("ann", "competitive", 1500, 0.0, a)
    ticket_b = Ticket("bob", "competitive", 1500, 0.0, b)
    assert acceptable(pool_by_id("competitive"), ticket_a, ticket_b, 0.0) is not same


# --- across nodes ----------------------------------------------------------------------------


async def test_players_on_two_nodes_are_paired_and_their_games_start(
    start_server: StartServer,
) -> None:
    one = await start_server(dice_factory=scripted(3), node_id="mm-a", **FAST)
    two = await start_server(dice_factory=scripted(3), node_id="mm-b", **FAST)
    alice = await player(one, "alice")
    bob = await player(two, "bob", binary=True)
    carol = await player(two, "carol")
    dave = await player(one, "dave", binary=True)
    visitor = await connect(one, await guest(one))
    erin = await player(two, "erin")

    queued = await alice.request({"type": "queue", "pool": "competitive"})
    assert queued["type"] == "queued" and queued["replaced_pool"] is None
    assert (queued["pool"], queued["waited"], queued["window"]) == ("competitive", 0.0, 50.0)
    for client, pool in ((bob, "competitive"), (carol, "match-3"), (dave, "match-3"),
                         (visitor, "boosted"), (erin, "boosted")):
        assert (await client.request({"type": "queue", "pool": pool}))["type"] == "queued"

    found: dict[str, dict[str, Any]] = {}
    for client in (alice, bob, carol, dave, visitor, erin):
        found[client.player] = await client.expect("match_found")
    starts = {c.player: await c.expect("game_start", table=found[c.player]["table"])
              for c in (alice, bob, carol, dave, visitor, erin)}

    # Competitive: Table42 stakes at cube 1, K 32 each, from each side's point of view.
    a, b = found["alice"], found["bob"]
    assert a["table"] == b["table"] and a["pool"] == "competitive" and a["rated"] is True
    assert a["opponent"] == {"player": "bob", "name": "bob", "rating": 1500,
                             "rating_shown": "1500"}
    assert a["stakes"] == stakes.table42_stakes(1500, 1500, cube=1, k=32,
                                                opponent_k=32).to_dict()
    assert a["stakes"]["player"]["win"] == 16 and b["stakes"]["player"]["loss"] == -16
    assert starts["alice"]["rating"] == {"rated": True, "ladder": "table42", "boosted": False,
                                         "unrated_reason": None}
    assert sorted(starts["alice"]["players"]) == ["alice", "bob"]
    # The announcement comes before the seating.
    assert index_of(alice, "match_found") < index_of(alice, "seated", table=a["table"])
    assert index_of(bob, "match_found") < index_of(bob, "game_start", table=a["table"])

    # Rated match to 3 on the FIBS ladder; both are "new".
    c, d = found["carol"], found["dave"]
    assert c["table"] == d["table"] and (c["ladder"], c["match_length"]) == ("fibs", 3)
    assert c["opponent"]["rating_shown"] == "new"
    assert c["stakes"] == stakes.fibs_stakes(1500.0, 1500.0, match_length=3, experience=0,
                                             opponent_experience=0).to_dict()
    assert starts["carol"]["rating"]["ladder"] == "fibs"
    assert starts["carol"]["match_length"] == 3

    # Boosted: a guest is welcome, nothing is staked, the game says why it is unrated.
    g, e = found[visitor.player], found["erin"]
    assert g["table"] == e["table"] and g["stakes"] is None and g["rated"] is False
    assert g["you"]["rating_shown"] == "guest" and e["opponent"]["rating_shown"] == "guest"
    assert starts["erin"]["mode"] == "boosted"
    assert starts["erin"]["rating"]["unrated_reason"] == "guest_player"

    # Every queue is empty, and queued players who now play cannot queue again.
    assert set((await matchmaker(one).queue.sizes()).values()) == {0}
    refused = await alice.request({"type": "queue", "pool": "boosted"})
    assert (refused["type"], refused["code"]) == ("error", "in_ranked_game")


async def test_twenty_players_at_one_instant_on_two_nodes_each_get_one_game(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one = await start_server(dice_factory=scripted(5), node_id="burst-a", **FAST)
    two = await start_server(dice_factory=scripted(5), node_id="burst-b", **FAST)
    tokens = await asyncio.gather(*(register(one, f"p{i:02d}") for i in range(20)))
    clients = await asyncio.gather(
        *(connect(one if i % 2 else two, token, binary=i % 3 == 0)
          for i, token in enumerate(tokens))
    )
    await asyncio.gather(*(c.send({"type": "queue", "pool": "competitive"}) for c in clients))
    # Both nodes also pass at the same instant, without the lease, while their loops run.
    for _ in range(3):
        await asyncio.gather(run_pass(one, "competitive"), run_pass(two, "competitive"))

    found = {c.player: await c.expect("match_found") for c in clients}
    for c in clients:
        await c.expect("game_start", table=found[c.player]["table"])
    await asyncio.sleep(0.3)  # several more passes on both nodes: nothing more may come
    tables: dict[str, set[str]] = {}
    for c in clients:
        assert len(c.of_type("match_found")) == 1, c.player
        assert len(c.of_type("game_start")) == 1, c.player
        mine = found[c.player]
        assert found[mine["opponent"]["player"]]["opponent"]["player"] == c.player
        tables.setdefault(mine["table"], set()).add(c.player)
        seat = await redis_client.get(f"{key_prefix}{{p:{c.player}}}:seat")
        assert seat is not None and seat.decode() == mine["table"]
    assert len(tables) == 10 and all(len(players) == 2 for players in tables.values())
    assert (await matchmaker(two).queue.sizes())["competitive"] == 0


async def test_widening_pairs_distant_ratings_only_after_the_documented_wait(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    curve = {"matchmaking_window_base": 20.0, "matchmaking_window_rate": 100.0,
             "matchmaking_window_cap": 400.0}
    one = await start_server(node_id="wide-a", **FAST, **curve)
    two = await start_server(node_id="wide-b", **FAST, **curve)
    store = RatingStore(redis_client, key_prefix)
    for i in range(4):  # seeded through the rating store: 1622 and 1378
        await store.settle(f"seed-w{i}", ladder="table42", winner="high", loser=f"x{i}",
                           cube=64, finished_at=1_700_000_000.0 + i)
        await store.settle(f"seed-l{i}", ladder="table42", winner=f"y{i}", loser="low",
                           cube=64, finished_at=1_700_000_000.0 + i)
    high_rating = (await store.rating("high", "table42")).rating
    low_rating = (await store.rating("low", "table42")).rating
    gap = high_rating - low_rating
    policy = matchmaker(one).policy
    needed = wait_for_gap(gap, policy)
    assert needed is not None and needed > 1.0

    high = await player(one, "high")
    low = await player(two, "low")
    await high.request({"type": "queue", "pool": "competitive"})
    queued = await low.request({"type": "queue", "pool": "competitive"})
    assert queued["rating"] == low_rating and queued["window"] == 20.0
    status = await low.request({"type": "queue_status"})
    assert status["type"] == "queue_status" and status["window"] < gap

    found_low = await low.expect("match_found")
    found_high = await high.expect("match_found")
    assert found_low["opponent"]["rating"] == high_rating
    assert found_high["opponent"]["rating_shown"] == str(low_rating)
    # The pass that paired them saw both windows cover the gap: each had waited long enough.
    assert found_low["waited"] >= needed and found_high["waited"] >= needed
    assert found_low["stakes"]["player"]["win"] > found_high["stakes"]["player"]["win"]
    await low.expect("game_start", table=found_low["table"])


# --- rules: network, guests ------------------------------------------------------------------


async def test_same_network_accounts_are_never_paired_in_rated_pools(
    start_server: StartServer,
) -> None:
    server = await start_server(node_id="net", **MANUAL)
    ann = await player(server, "ann", "2001:db8:1:2::10")
    bob = await player(server, "bob", "2001:db8:1:2:ffff::20")  # the same /64
    alone = await ann.request({"type": "queue", "pool": "competitive"})
    assert alone["note"] is None  # nobody else waits: nothing to explain
    queued = await bob.request({"type": "queue", "pool": "competitive"})
    assert queued["note"] == "same_network"  # says why, and the page shows it
    assert await run_pass(server, "competitive") == 0
    status = await ann.request({"type": "queue_status"})
    assert (status["type"], status["note"]) == ("queue_status", "same_network")

    cat = await player(server, "cat", "::ffff:203.0.113.5")  # IPv4-mapped: 203.0.113.5
    dan = await player(server, "dan", "203.0.113.5")
    for client in (cat, dan):
        queued = await client.request({"type": "queue", "pool": "competitive"})
        assert queued["note"] is None  # another network waits too
    assert await run_pass(server, "competitive") == 2
    for client in (ann, bob, cat, dan):
        found = await client.expect("match_found")
        crossing = {client.player, found["opponent"]["player"]}
        assert crossing not in ({"ann", "bob"}, {"cat", "dan"})
        start = await client.expect("game_start", table=found["table"])
        assert start["rating"]["rated"] is True  # rating agrees: different networks

    # Boosted pairs anyone; the game then earns no points, for the same rule.
    eve = await player(server, "eve", "198.51.100.9")
    fay = await player(server, "fay", "198.51.100.9")
    for client in (eve, fay):
        queued = await client.request({"type": "queue", "pool": "boosted"})
        assert queued["note"] is None
    assert await run_pass(server, "boosted") == 1
    found = await eve.expect("match_found")
    start = await fay.expect("game_start", table=found["table"])
    assert start["rating"]["unrated_reason"] == "same_address"


async def test_guests_queue_only_for_boosted(start_server: StartServer) -> None:
    server = await start_server(node_id="guests", **MANUAL)
    visitor = await connect(server, await guest(server))
    for pool in ("competitive", "match-1", "match-7"):
        refused = await visitor.request({"type": "queue", "pool": pool})
        assert (refused["code"], refused["field"]) == ("guest_not_allowed", "pool")
    assert (await visitor.request({"type": "queue", "pool": "boosted"}))["type"] == "queued"
    assert (await matchmaker(server).queue.sizes())["boosted"] == 1


# --- tickets that go away --------------------------------------------------------------------


async def test_cancel_replace_status_and_expiry(start_server: StartServer) -> None:
    server = await start_server(node_id="cancel", matchmaking_status_interval=0.1,
                                matchmaking_ticket_ttl=0.6, matchmaking_pass_interval=0.1)
    alice = await player(server, "alice")
    await alice.request({"type": "queue", "pool": "competitive"})
    replaced = await alice.request({"type": "queue", "pool": "match-5"})
    assert (replaced["pool"], replaced["replaced_pool"]) == ("match-5", "competitive")
    sizes = await matchmaker(server).queue.sizes()
    assert (sizes["competitive"], sizes["match-5"]) == (0, 1)

    pushed = await alice.expect("queue_status")  # unasked: the periodic update
    assert pushed["pool"] == "match-5" and "ref" not in pushed
    assert pushed["window"] == min(400.0, 50.0 + 10.0 * pushed["waited"])
    cancelled = await alice.request({"type": "cancel_queue"})
    assert (cancelled["type"], cancelled["pool"], cancelled["reason"]) == (
        "queue_cancelled", "match-5", "cancelled")
    for kind in ("cancel_queue", "queue_status"):
        refused = await alice.request({"type": kind})
        assert refused["code"] == "not_queued"

    await alice.request({"type": "queue", "pool": "boosted"})  # alone: it expires
    expired = await alice.expect("queue_expired")
    assert expired["pool"] == "boosted" and expired["waited"] > 0.6
    assert await matchmaker(server).queue.ticket("alice") is None


async def test_disconnect_sitting_down_and_node_shutdown_remove_the_ticket(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one = await start_server(node_id="left-a", **MANUAL)
    two = await start_server(node_id="left-b", **MANUAL)
    queue = matchmaker(one).queue
    token = await register(one, "alice")
    first = await connect(one, token)
    second = await connect(one, token)
    elsewhere = await connect(two, token)
    await first.request({"type": "queue", "pool": "competitive"})

    async def queued(name: str) -> bool:
        return await queue.ticket(name) is not None

    async def gone(name: str) -> bool:
        return await queue.ticket(name) is None

    await elsewhere.close()  # a socket on another node: the ticket stays
    await second.close()  # not the last socket on the node that queued: stays
    await asyncio.sleep(0.2)
    assert await queued("alice")
    await first.close()
    await eventually(lambda: gone("alice"))

    bob = await player(two, "bob")
    await bob.request({"type": "queue", "pool": "competitive"})
    created = await bob.request({"type": "create_table", "mode": "private"})
    assert created["type"] == "table_created"
    cancelled = await bob.expect("queue_cancelled")
    assert cancelled["reason"] == "seated"
    await eventually(lambda: gone("bob"))

    carol = await player(two, "carol")
    await carol.request({"type": "queue", "pool": "match-1"})
    await two.stop()
    assert await carol.wait_closed() == 1012  # a peer is alive: drained (service restart)
    assert await gone("carol")

    # A node starting under a node id removes what an earlier run of it left behind.
    stale = MatchmakingQueue(redis_client, prefix=key_prefix, node="left-c")
    await stale.enqueue("dave", "competitive", rating=1500, address="192.0.2.1")
    await start_server(node_id="left-c", **MANUAL)
    assert await gone("dave")


async def test_a_pair_with_a_seated_player_puts_the_other_back(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    server = await start_server(node_id="seated", **MANUAL)
    queue = matchmaker(server).queue
    alice = await player(server, "alice")
    bob = await player(server, "bob")
    await alice.request({"type": "queue", "pool": "competitive"})
    await bob.request({"type": "queue", "pool": "competitive"})
    before = await queue.ticket("alice")
    # Bob sits down elsewhere behind the lobby's back (as another node might, mid-pass).
    await redis_client.set(f"{key_prefix}{{p:bob}}:seat", "elsewhere")
    assert await run_pass(server, "competitive") == 1
    after = await queue.ticket("alice")
    assert before is not None and after is not None
    assert after.queued_at == before.queued_at and await queue.ticket("bob") is None
    assert not alice.of_type("match_found") and not bob.of_type("match_found")
    assert (await alice.request({"type": "queue_status"}))["type"] == "queue_status"


async def test_a_stopping_node_puts_a_claimed_pair_back(start_server: StartServer) -> None:
    one = await start_server(node_id="stop-a", **MANUAL)
    two = await start_server(node_id="stop-b", **MANUAL)
    queue = matchmaker(two).queue
    alice = await player(two, "alice")
    bob = await player(two, "bob")
    for client in (alice, bob):
        await client.request({"type": "queue", "pool": "match-1"})
    before = {name: await queue.ticket(name) for name in ("alice", "bob")}
    result = await matchmaker(one).queue.pair_unleased("match-1")
    assert len(result.pairs) == 1 and await queue.ticket("alice") is None
    one.lobby.closing = True  # what shutdown sets before the pairing loop is cancelled
    await matchmaker(one).on_pass(result)
    after = {name: await queue.ticket(name) for name in ("alice", "bob")}
    assert after == before and not one.lobby.tables
    assert not alice.of_type("match_found")


# --- bad input and the HTTP overview -----------------------------------------------------------


async def test_every_bad_input_gets_its_code(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(1), node_id="bad", max_match_length=5,
                                matchmaking_max_tickets=1, **MANUAL)
    alice = await player(server, "alice")
    cases: list[tuple[dict[str, Any], str, str | None]] = [
        ({"type": "queue"}, "missing_field", "pool"),
        ({"type": "queue", "pool": 5}, "bad_field", "pool"),
        ({"type": "queue", "pool": "x" * 33}, "bad_field", "pool"),
        ({"type": "queue", "pool": "ranked"}, "unknown_pool", "pool"),
        ({"type": "queue", "pool": "match-7"}, "unknown_pool", "pool"),  # > max_match_length
        ({"type": "cancel_queue"}, "not_queued", None),
        ({"type": "queue_status"}, "not_queued", None),
    ]
    for message, code, field in cases:
        refused = await alice.request(message)
        assert (refused["type"], refused["code"], refused.get("field")) == (
            "error", code, field), message

    visitor = await connect(server, await guest(server))
    refused = await visitor.request({"type": "queue", "pool": "match-3"})
    assert refused["code"] == "guest_not_allowed"

    assert (await alice.request({"type": "queue", "pool": "match-3"}))["type"] == "queued"
    bob = await player(server, "bob")
    refused = await bob.request({"type": "queue", "pool": "match-3"})
    assert (refused["code"], refused["field"]) == ("queue_full", "pool")
    await alice.request({"type": "cancel_queue"})

    carol = await player(server, "carol")
    dave = await player(server, "dave")
    table, _ = await seat_two(server, carol, dave)  # a rated Competitive game
    refused = await carol.request({"type": "queue", "pool": "competitive"})
    assert (refused["code"], refused["field"]) == ("in_ranked_game", "pool")
    created = await bob.request({"type": "create_table", "mode": "competitive"})
    refused = await bob.request({"type": "queue", "pool": "boosted"})
    assert (refused["code"], refused["field"]) == ("already_seated", "table")
    assert created["table"] in refused["message"] and table not in refused["message"]

    stranger = await connect(server, None)  # not authenticated yet
    await stranger.send({"type": "queue", "pool": "competitive", "id": 1})
    assert (await stranger.expect("error"))["code"] == "auth_required"


async def test_http_overview_shows_queue_sizes_and_the_window(
    start_server: StartServer,
) -> None:
    server = await start_server(node_id="http", max_match_length=5, **MANUAL)
    alice = await player(server, "alice")
    visitor = await connect(server, await guest(server))
    await alice.request({"type": "queue", "pool": "match-5"})
    await visitor.request({"type": "queue", "pool": "boosted"})
    async with aiohttp.ClientSession() as http, http.get(
        f"{server.http}/api/matchmaking"
    ) as resp:
        assert resp.status == 200
        body = await resp.json()
    waiting = {entry["pool"]: entry["waiting"] for entry in body["pools"]}
    assert waiting == {"competitive": 0, "match-1": 0, "match-3": 0, "match-5": 1,
                       "match-7": 0, "boosted": 1}
    offered = {entry["pool"]: entry["offered"] for entry in body["pools"]}
    assert offered["match-5"] and not offered["match-7"]
    assert body["window"] == {"base": 50.0, "rate": 10.0, "cap": 400.0,
                              "seconds_to_cap": 35.0, "ticket_ttl": 1800.0}
    assert body["pass_interval"] == 3600.0


async def test_tickets_of_reads_many_players_at_once(
    start_server: StartServer,
) -> None:
    server = await start_server(node_id="many", **MANUAL)
    queue = matchmaker(server).queue
    for i, pool in enumerate(("competitive", "match-3", "boosted")):
        await queue.enqueue(f"q{i}", pool, rating=1500 + i, address=f"192.0.2.{i}")
    found = await queue.tickets_of(["q0", "q1", "q2", "nobody", "q0"])
    assert {p: (t.pool, t.rating) for p, t in found.items()} == {
        "q0": ("competitive", 1500), "q1": ("match-3", 1501), "q2": ("boosted", 1502)}
    assert await queue.tickets_of([]) == {}

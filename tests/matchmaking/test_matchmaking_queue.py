"""The Redis queue: one ticket per player, cancel, sizes, and pairing claimed atomically by
several nodes at once (real Redis; every key under the test's prefix)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as aioredis

from server.matchmaking import (
    GuestNotAllowedError,
    InRankedGameError,
    InvalidTicketError,
    NotQueuedError,
    Ticket,
    UnknownPoolError,
    wait_for_gap,
)
from server.matchmaking.errors import QueueFullError
from server.matchmaking.policy import POOLS
from server.store.queue import (
    MatchmakingKeys,
    MatchmakingQueue,
    PassResult,
    QueueSettings,
    decode_ticket,
    encode_ticket,
    pairing_pass,
)

T = 1_700_000_000.0
NO_HOLD = QueueSettings(hold_ms=0)  # most tests pair one pool several times in a row
MakeQueue = Callable[..., Awaitable[MatchmakingQueue]]


@pytest.fixture
async def make_queue(
    redis_url: str, redis_client: aioredis.Redis, key_prefix: str
) -> AsyncIterator[MakeQueue]:
    """A queue per "node", each on its own connection pool; ``redis_client`` cleans up."""
    clients: list[aioredis.Redis] = []

    async def make(
        node: str = "n1", queue_settings: QueueSettings = NO_HOLD, **kwargs: object
    ) -> MatchmakingQueue:
        client = aioredis.Redis.from_url(redis_url)
        clients.append(client)
        return MatchmakingQueue(
            client, prefix=key_prefix, node=node, queue_settings=queue_settings, **kwargs  # type: ignore[arg-type]
        )

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture
async def queue(make_queue: MakeQueue) -> MatchmakingQueue:
    return await make_queue()


async def join(
    queue: MatchmakingQueue,
    player: str,
    rating: float,
    *,
    pool: str = "competitive",
    at: float = T,
    address: str | None = None,
    **kwargs: object,
) -> None:
    await queue.enqueue(
        player,
        pool,
        rating=rating,
        address=address if address is not None else f"10.0.0.{sum(map(ord, player)) % 250}",
        now=at,
        **kwargs,  # type: ignore[arg-type]
    )


def names(result: PassResult | None) -> list[tuple[str, str]]:
    assert result is not None
    return [pair.players for pair in result.pairs]


# --- one player ----------------------------------------------------------------------------


async def test_queue_status_and_sizes(queue: MatchmakingQueue) -> None:
    queued = await queue.enqueue(
        "ann", "match-5", rating=1612.25, address="1.2.3.4", experience=7, now=T, name="Ann"
    )
    assert queued.replaced_pool is None
    assert queued.ticket.is_new and queued.ticket.node == "n1"
    assert (queued.status.waited, queued.status.window) == (0, 50)
    assert await queue.ticket("ann") == queued.ticket
    status = await queue.status("ann", now=T + 12)
    assert status is not None and (status.waited, status.window) == (12, 170)
    assert await queue.status("bob") is None
    sizes = await queue.sizes()
    assert sizes == {"competitive": 0, "match-1": 0, "match-3": 0, "match-5": 1,
                     "match-7": 0, "boosted": 0}


async def test_queueing_again_replaces_the_ticket_in_any_pool(queue: MatchmakingQueue) -> None:
    await join(queue, "ann", 1500)
    again = await queue.enqueue("ann", "competitive", rating=1510, address="1.1.1.1", now=T + 5)
    assert again.replaced_pool == "competitive"
    moved = await queue.enqueue("ann", "match-3", rating=1490, address="1.1.1.1", now=T + 9)
    assert moved.replaced_pool == "competitive"
    assert (await queue.sizes())["competitive"] == 0
    assert (await queue.sizes())["match-3"] == 1
    held = await queue.ticket("ann")
    assert held is not None and (held.pool, held.queued_at) == ("match-3", T + 9)
    assert [t.player for t in await queue.tickets("match-3")] == ["ann"]


async def test_cancel_and_remove(queue: MatchmakingQueue) -> None:
    await join(queue, "ann", 1500)
    cancelled = await queue.cancel("ann")
    assert cancelled.player == "ann"
    assert await queue.ticket("ann") is None
    assert sum((await queue.sizes()).values()) == 0
    with pytest.raises(NotQueuedError) as caught:
        await queue.cancel("ann")
    assert caught.value.code == "not_queued"
    assert await queue.remove("ann") is None
    await join(queue, "ann", 1500)
    assert await queue.remove("ann") is not None
    assert await queue.remove("ann") is None


async def test_disconnect_cleanup_only_for_the_node_that_queued(make_queue: MakeQueue) -> None:
    one, two = await make_queue("one"), await make_queue("two")
    await join(one, "ann", 1500)
    assert await two.remove("ann", only_node="two") is None  # queued through node one
    assert await one.ticket("ann") is not None
    removed = await one.remove("ann", only_node="one")
    assert removed is not None and removed.node == "one"
    assert await one.ticket("ann") is None


@pytest.mark.parametrize(
    ("pool", "kwargs", "error", "code"),
    [
        ("ranked", {}, UnknownPoolError, "unknown_pool"),
        ("competitive", {"is_guest": True}, GuestNotAllowedError, "guest_not_allowed"),
        ("match-7", {"is_guest": True}, GuestNotAllowedError, "guest_not_allowed"),
        ("boosted", {"in_ranked_game": True}, InRankedGameError, "in_ranked_game"),
        ("competitive", {"address": ""}, InvalidTicketError, "invalid_ticket"),
        ("competitive", {"rating": float("nan")}, InvalidTicketError, "invalid_ticket"),
    ],
)
async def test_bad_requests(
    queue: MatchmakingQueue,
    pool: str,
    kwargs: dict[str, object],
    error: type[Exception],
    code: str,
) -> None:
    request: dict[str, object] = {"rating": 1500, "address": "1.2.3.4", **kwargs}
    with pytest.raises(error) as caught:
        await queue.enqueue("ann", pool, **request)  # type: ignore[arg-type]
    assert getattr(caught.value, "code", None) == code
    assert await queue.ticket("ann") is None


async def test_guest_may_queue_for_boosted(queue: MatchmakingQueue) -> None:
    queued = await queue.enqueue("guest-7", "boosted", rating=1500, address="1.2.3.4",
                                 is_guest=True)
    assert queued.ticket.is_guest


async def test_a_full_pool_refuses_new_players_but_not_requeues(make_queue: MakeQueue) -> None:
    queue = await make_queue(queue_settings=QueueSettings(max_tickets=2, hold_ms=0))
    await join(queue, "ann", 1500)
    await join(queue, "bob", 1500)
    with pytest.raises(QueueFullError):
        await join(queue, "cid", 1500)
    await join(queue, "ann", 1520)  # replacing one's own ticket is fine


async def test_requeue_keeps_the_wait_unless_the_player_queued_again(
    queue: MatchmakingQueue,
) -> None:
    await join(queue, "ann", 1500)
    held = await queue.cancel("ann")
    assert await queue.requeue(held)
    assert await queue.ticket("ann") == held
    await join(queue, "ann", 1500, at=T + 30)
    assert not await queue.requeue(held)
    current = await queue.ticket("ann")
    assert current is not None and current.queued_at == T + 30


def test_ticket_codec_round_trip() -> None:
    ticket = Ticket("ann", "match-1", 1523.37, T + 0.125, "2001:db8::1", is_new=True,
                    node="n", ticket_id="abc", name="Änn", experience=3)
    assert decode_ticket(encode_ticket(ticket)) == ticket
    with pytest.raises(InvalidTicketError):
        decode_ticket(b"{not json")
    with pytest.raises(InvalidTicketError):
        decode_ticket('{"v": 1, "player": "x"}')


def test_keys_share_one_hash_tag() -> None:
    keys = MatchmakingKeys("p:")
    assert keys.players == "p:mm:{mm}:players"
    assert keys.pool("match-3") == "p:mm:{mm}:pool:match-3"
    assert keys.lease("boosted") == "p:mm:{mm}:lease:boosted"
    with pytest.raises(ValueError, match="prefix"):
        MatchmakingKeys("a{b}")


# --- pairing -------------------------------------------------------------------------------


async def test_pass_pairs_closest_first(queue: MatchmakingQueue) -> None:
    for player, rating in [("a", 1500), ("b", 1530), ("c", 1535), ("d", 1580)]:
        await join(queue, player, rating)
    result = await queue.run_pass("competitive", now=T)
    assert names(result) == [("b", "c")]
    assert result is not None and result.waiting == 2
    assert {t.player for t in await queue.tickets("competitive")} == {"a", "d"}
    assert await queue.ticket("b") is None


async def test_widening_pairs_distant_ratings_only_after_the_documented_wait(
    queue: MatchmakingQueue,
) -> None:
    needed = wait_for_gap(300)
    assert needed == 25  # base 50 + 10 points per second
    await join(queue, "low", 1500, at=T)
    await join(queue, "high", 1800, at=T + 10)  # the later ticket's window decides
    assert names(await queue.run_pass("competitive", now=T + 10 + needed - 0.5)) == []
    assert names(await queue.run_pass("competitive", now=T + 10 + needed)) == [("low", "high")]


async def test_same_address_and_guests(queue: MatchmakingQueue) -> None:
    await join(queue, "a", 1500, address="9.9.9.9")
    await join(queue, "b", 1500, address="9.9.9.9")
    await join(queue, "c", 1500, pool="boosted", address="9.9.9.9")
    await join(queue, "d", 1500, pool="boosted", address="9.9.9.9", is_guest=True)
    assert names(await queue.run_pass("competitive", now=T + 60)) == []
    assert sorted(names(await queue.run_pass("boosted", now=T))[0]) == ["c", "d"]
    await join(queue, "e", 1700, address="8.8.8.8")
    assert len(names(await queue.run_pass("competitive", now=T + 60))) == 1


async def test_new_fibs_player_pairs_with_anyone(queue: MatchmakingQueue) -> None:
    await join(queue, "rookie", 1500, pool="match-3", experience=0)
    await join(queue, "master", 2100, pool="match-3", experience=900)
    assert names(await queue.run_pass("match-3", now=T)) == [("rookie", "master")]


async def test_expired_tickets_are_removed(queue: MatchmakingQueue) -> None:
    await join(queue, "ann", 1500, at=T)
    await join(queue, "bob", 2500, at=T + 1000)
    result = await queue.run_pass("competitive", now=T + 1801)
    assert result is not None and [t.player for t in result.expired] == ["ann"]
    assert await queue.ticket("ann") is None
    assert await queue.ticket("bob") is not None


async def test_a_held_lease_skips_the_pass(make_queue: MakeQueue, key_prefix: str) -> None:
    one, two = await make_queue("one"), await make_queue("two")
    await join(one, "a", 1500)
    await join(one, "b", 1500)
    await one.redis.set(one.keys.lease("competitive"), "someone", px=5000)
    assert await two.run_pass("competitive", now=T) is None
    assert await two.run_all(now=T) != []  # other pools still run
    await one.redis.delete(one.keys.lease("competitive"))
    assert names(await two.run_pass("competitive", now=T)) == [("a", "b")]
    assert await one.redis.exists(one.keys.lease("competitive")) == 0  # released


async def test_a_pass_holds_the_pool_for_hold_ms(make_queue: MakeQueue) -> None:
    one = await make_queue("one", queue_settings=QueueSettings(hold_ms=3000))
    two = await make_queue("two", queue_settings=QueueSettings(hold_ms=3000))
    await join(one, "a", 1500)
    await join(one, "b", 1500)
    assert await one.run_pass("competitive", now=T) is not None
    await join(one, "c", 1500)
    await join(one, "d", 1500)
    assert await two.run_pass("competitive", now=T) is None  # paired moments ago
    assert await one.run_pass("competitive", now=T) is None
    ttl = await one.redis.pttl(one.keys.lease("competitive"))
    assert 0 < ttl <= 3000


async def test_a_changed_ticket_spoils_only_its_own_claim(queue: MatchmakingQueue) -> None:
    for player in "abcd":
        await join(queue, player, 1500)
    stale = {t.player: t.ticket_id for t in await queue.tickets("competitive")}
    await join(queue, "a", 1500, at=T + 1)  # re-queued: a new ticket
    claimed = await queue._take_groups(
        "competitive", 2, [("a", stale["a"], "b", stale["b"]), ("c", stale["c"], "d", stale["d"])]
    )
    assert claimed == [False, True]
    assert {t.player for t in await queue.tickets("competitive")} == {"a", "b"}
    assert await queue.ticket("c") is None and await queue.ticket("a") is not None


async def test_remove_node_tickets(make_queue: MakeQueue) -> None:
    one, two = await make_queue("one"), await make_queue("two")
    await join(one, "a", 1500)
    await join(one, "b", 1500, pool="match-1")
    await join(two, "c", 1500)
    removed = await two.remove_node_tickets("one")
    assert sorted(t.player for t in removed) == ["a", "b"]
    assert await two.sizes() == {"competitive": 1, "match-1": 0, "match-3": 0, "match-5": 0,
                                 "match-7": 0, "boosted": 0}


async def test_a_pairing_pass_hands_over_pairs_and_survives_a_failing_handler(
    make_queue: MakeQueue,
) -> None:
    queue = await make_queue(clock=lambda: T)
    seen: list[PassResult] = []

    async def handle(result: PassResult) -> None:
        seen.append(result)
        if len(seen) == 1:
            raise RuntimeError("the handler failed once")

    await join(queue, "a", 1500)
    await join(queue, "b", 1500)
    await join(queue, "c", 1500, pool="match-1")
    await join(queue, "d", 1500, pool="match-1")
    await pairing_pass(queue, handle)  # the first handler call raised: the second came
    assert sorted(names(result) for result in seen) == [[("a", "b")], [("c", "d")]]
    await pairing_pass(queue, handle)  # nothing left to pair
    assert len(seen) == 2


# --- several nodes at once -----------------------------------------------------------------


async def test_many_players_at_one_instant_on_several_nodes_are_paired_once(
    make_queue: MakeQueue, key_prefix: str
) -> None:
    rng = random.Random(6)
    nodes = [
        await make_queue(f"node{i}", queue_settings=QueueSettings(claim_batch=16, hold_ms=0))
        for i in range(4)
    ]
    players = [f"p{i:03}" for i in range(240)]
    pools = ["competitive", "match-1", "boosted"]

    async def arrive(index: int, player: str) -> None:
        node = nodes[index % len(nodes)]
        await join(node, player, rng.gauss(1500, 60), pool=pools[index % 3], at=T,
                   address=f"10.1.{index}.1")
        if index % 10 == 0:  # some change their mind while others pair, some of them late
            await asyncio.sleep(0.05 if index % 20 == 0 else 0)
            await join(node, player, 1500, pool=pools[(index + 1) % 3], at=T + 0.5,
                       address=f"10.1.{index}.1")

    async def pair_forever(node: MatchmakingQueue, leased: bool) -> list[PassResult]:
        results: list[PassResult] = []
        for round_ in range(8):
            for pool in pools:
                if leased:
                    result = await node.run_pass(pool, now=T + 40 + round_)
                    if result is not None:
                        results.append(result)
                else:  # no lease: every node plans from the same snapshot and races to claim
                    results.append(await node.pair_unleased(pool, now=T + 40 + round_))
            await asyncio.sleep(0)
        return results

    arrivals = asyncio.gather(*(arrive(i, p) for i, p in enumerate(players)))
    pairing = asyncio.gather(
        *(pair_forever(node, leased=i % 2 == 0) for i, node in enumerate(nodes))
    )
    _, batches = await asyncio.gather(arrivals, pairing)
    results = [r for batch in batches for r in batch]
    assert results

    # A ticket is claimed at most once. A player who re-queued (the mind-changers) may have
    # been paired on the first ticket before the second one was stored: that is a new
    # request, not the same one handed out twice (the server refuses the second game while
    # the first one holds the seat).
    claims: dict[str, list[Ticket]] = {}
    for result in results:
        for pair in result.pairs:
            assert pair.first.pool == pair.second.pool == result.pool.id
            for ticket in (pair.first, pair.second):
                claims.setdefault(ticket.player, []).append(ticket)
    claimed_ids = [t.ticket_id for held in claims.values() for t in held]
    assert len(claimed_ids) == len(set(claimed_ids)), "a ticket was handed two games"
    changers = {p for i, p in enumerate(players) if i % 10 == 0}
    for player, held in claims.items():
        if len(held) > 1:
            assert player in changers and len(held) == 2, f"{player} was handed two games"
            assert held[0].pool != held[1].pool
    waiting_tickets = [t for pool in pools for t in await nodes[0].tickets(pool)]
    waiting = {t.player for t in waiting_tickets}
    assert len(waiting) == len(waiting_tickets)  # one ticket per player
    assert not {t.ticket_id for t in waiting_tickets} & set(claimed_ids)
    assert not (waiting & set(claims)) - changers
    assert waiting | set(claims) == set(players)  # nobody lost
    index = await nodes[0].redis.hgetall(nodes[0].keys.players)  # type: ignore[misc]
    assert {key.decode() for key in index} == waiting  # the player index agrees
    assert sum((await nodes[0].sizes()).values()) == len(waiting)
    assert len(waiting - changers) <= len(pools)


async def test_two_nodes_planning_from_one_snapshot_claim_each_pair_once(
    make_queue: MakeQueue,
) -> None:
    one, two = await make_queue("one"), await make_queue("two")
    for i in range(20):
        await join(one if i % 2 else two, f"p{i:02}", 1500 + i)
    first, second = await asyncio.gather(
        one.pair_unleased("competitive", now=T), two.pair_unleased("competitive", now=T)
    )
    planned = {pair.players for pair in (*first.pairs, *first.lost)}
    assert planned == {pair.players for pair in (*second.pairs, *second.lost)}
    assert len(planned) == 10
    won = [pair.players for pair in (*first.pairs, *second.pairs)]
    assert sorted(won) == sorted(planned)  # every planned pair claimed by exactly one node
    assert len(first.lost) + len(second.lost) == 10
    assert await one.sizes() == dict.fromkeys(await one.sizes(), 0)


# --- Redis Cluster -------------------------------------------------------------------------


async def test_the_queue_runs_on_a_cluster(
    redis_cluster: aioredis.RedisCluster, key_prefix: str
) -> None:
    """A one-node cluster refuses scripts whose keys span slots: the {mm} tag holds."""
    queue = MatchmakingQueue(redis_cluster, prefix=key_prefix, node="c")
    await queue.load_scripts()
    await join(queue, "a", 1500)
    await join(queue, "b", 1510, pool="match-7")
    await join(queue, "b", 1510)  # moves pools: one script over the index and two pools
    assert await queue.sizes() == {"competitive": 2, "match-1": 0, "match-3": 0, "match-5": 0,
                                   "match-7": 0, "boosted": 0}
    assert names(await queue.run_pass("competitive", now=T)) == [("a", "b")]
    await join(queue, "c", 1500)
    assert (await queue.cancel("c")).player == "c"
    assert await queue.remove_node_tickets("c") == []



async def test_run_all_can_skip_the_empty_pools(queue: MatchmakingQueue) -> None:
    assert await queue.run_all(now=T, skip_empty=True) == []
    assert len(await queue.run_all(now=T)) == len(POOLS)  # every pool, empty or not
    await join(queue, "a", 1500, pool="match-3")
    await join(queue, "b", 1500, pool="match-3")
    results = await queue.run_all(now=T, skip_empty=True)
    assert [r.pool.id for r in results] == ["match-3"]
    assert names(results[0]) == [("a", "b")]

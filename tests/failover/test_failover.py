"""A node dies and its games go on (ownership, fencing and takeover): separate
``python -m server`` processes on loopback, one Redis, real protocol clients.

Every test plays real rated games (Competitive single games between registered players
from distinct addresses) with the server's own dice, making the first legal play and taking
every double. Each ends by checking what the players saw (versions contiguous, none twice
with different contents), what Redis holds (the table's log: each version once, in order)
and the settlement (one rating event per player, one game on each profile).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from typing import Any

import msgpack
import redis.asyncio as aioredis
from nodes import (
    TAKEOVER_BOUND,
    TIMEOUT,
    Cluster,
    Node,
    Player,
    get_json,
    play_moves,
    play_to_end,
    profile,
    rating_events,
    resync,
    seat_two,
    step,
    wait_until,
)

from server.client import ConnectionLost, RequestFailed, RequestTimeout, guest_token

# --- checks shared by the tests ----------------------------------------------------------------


def assert_saw_every_version_once(players: list[Player], table: str) -> None:
    for p in players:
        assert p.delivered.get(table), f"{p.player} saw no event of {table}"
        if p.gaps(table):
            gap = p.gaps(table)[0][0]
            around = [(m.get("type"), m.get("v"), m.get("complete"),
                       [e.get("v") for e in m.get("events") or ()])
                      for m in p.messages if m.get("table") == table
                      and (m.get("type") in ("sync", "resume", "error")
                           or abs(int(m.get("v") or 0) - gap) < 3)]
            raise AssertionError(f"{p.player}: versions skipped at {table}: {p.gaps(table)}; "
                                 f"messages about then: {around[-12:]}; sync failures: "
                                 f"{p.sync_failures}")
        assert not p.conflicts, f"{p.player}: a version came twice, different: {p.conflicts}"


async def assert_log_contiguous(cluster: Cluster, redis: aioredis.Redis, table: str) -> None:
    versions = await cluster.event_versions(redis, table)
    assert versions, f"no event of {table} in Redis"
    twice = sorted({v for v in versions if versions.count(v) > 1})
    assert not twice, f"the log of {table} holds these versions more than once: {twice}"
    expected = list(range(versions[0], versions[0] + len(versions)))
    assert versions == expected, f"the log of {table} is not v, v+1, ...: {versions}"


async def assert_settled_once(node: Node, players: list[Player], game_id: str) -> None:
    """One rating event per player for ``game_id`` (received live, or from the inbox on a
    later connection), and one game on each player's Table42 profile."""
    async def settled() -> bool:
        # every event came live, or the store has the result (the rest waits in inboxes)
        if all(rating_events(p, game_id) for p in players):
            return True
        for p in players:
            if (await profile(node, p.player)).games < 1:
                return False
        return True

    loop = asyncio.get_running_loop()
    deadline = loop.time() + TAKEOVER_BOUND
    while not await settled() and loop.time() < deadline:
        await asyncio.sleep(0.1)
    for p in players:
        if not rating_events(p, game_id):  # not pushed live: the inbox, on a new connection
            await p.switch(node)
    try:
        await wait_until(lambda: all(rating_events(p, game_id) for p in players), timeout=5.0,
                         what=f"a rating event for {game_id} at every player")
    except AssertionError:
        got = {p.player: (len(rating_events(p, game_id)),
                          (await profile(node, p.player)).games) for p in players}
        raise AssertionError(f"a rating event for {game_id} missing; (events, games "
                             f"settled) per player: {got}") from None
    changes = {}
    for p in players:
        events = rating_events(p, game_id)
        ids = {e.get("event_id") for e in events}
        assert len(ids) == 1, f"{p.player}: {len(ids)} rating events for {game_id}: {events}"
        assert len({(e["old"], e["new"]) for e in events}) == 1, events
        changes[p.player] = events[0]["change"]
        prof = await profile(node, p.player)
        assert prof.games == 1, f"{p.player}: {prof.games} games settled: {prof.history}"
        assert len(prof.history) == 1, prof.history
        assert prof.rating == events[0]["new"], (prof, events[0])
    assert sum(changes.values()) == 0, changes


def game_id_of(over: dict[str, Any]) -> str:
    return str(over["game_id"])


# --- the owner dies -------------------------------------------------------------------------


async def test_sigkill_owner_mid_game_another_node_takes_over(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    n1, n2 = await cluster.start_many(["n1", "n2"])
    a = await cluster.player("alice", n1)
    b = await cluster.player("bob", n1)
    table = await seat_two(a, b)
    assert (await a.request({"type": "sync", "table": table, "since": 0}))["state"][
        "rating"]["rated"] is True
    await play_moves([a, b], table, 12)

    n1.kill()
    await n1.wait()
    for p in (a, b):
        await p.switch(n2)
    for p in (a, b):  # n2 serves the table once it has taken it over
        await resync(p, table)
    over = await play_to_end([a, b], table)

    assert over["reason"] == "normal", over
    assert all(p.of_type("game_over", table)[-1]["game_id"] == over["game_id"] for p in (a, b))
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n2, [a, b], game_id_of(over))


async def test_the_only_node_killed_and_started_again_takes_its_games_back(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """No peer to claim them: a node started again under the same id claims back the tables
    its table set still names as its own (nothing expires them: a table's record has no
    time), and the game goes on."""
    (n1,) = await cluster.start_many(["n1"])
    a = await cluster.player("alice", n1)
    b = await cluster.player("bob", n1)
    table = await seat_two(a, b)
    await play_moves([a, b], table, 8)

    n1.kill()
    await n1.wait()
    n1 = await cluster.start("n1")
    for p in (a, b):
        await p.switch(n1)
    for p in (a, b):
        await resync(p, table)
    over = await play_to_end([a, b], table)

    assert over["reason"] == "normal", over
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n1, [a, b], game_id_of(over))


async def test_owner_killed_as_game_ends_settles_once(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """The owner dies the moment the first ``game_over`` reaches a player: the rating events
    may not have gone out (best effort, black-box). The result is settled once and both
    players get their rating event (live from the new owner, or from the inbox)."""
    n1, n2 = await cluster.start_many(["n1", "n2"])
    a = await cluster.player("alice", n1)
    b = await cluster.player("bob", n1)
    table = await seat_two(a, b)

    def kill_at_game_over(message: dict[str, Any]) -> None:
        if message.get("type") == "game_over" and message.get("table") == table:
            n1.kill()

    a.on_frame = b.on_frame = kill_at_game_over
    with contextlib.suppress(ConnectionLost, RequestTimeout):
        while n1.running and await step([a, b], table, retry_for=TIMEOUT):
            pass
    await n1.wait()
    for p in (a, b):
        await p.switch(n2)
        if not p.of_type("game_over", table):
            await resync(p, table)
    try:
        await wait_until(lambda: all(p.of_type("game_over", table) for p in (a, b)),
                         timeout=TAKEOVER_BOUND, what="game_over at both players")
    except AssertionError:
        log = await cluster.event_versions(redis_client, table)
        seen = {p.player: (p.delivered.get(table, [])[-3:], p.sync_failures,
                           [(m.get("type"), m.get("v")) for m in p.messages
                            if m.get("table") == table][-5:]) for p in (a, b)}
        raise AssertionError(f"game_over not at both players; Redis log ends "
                             f"{log[-3:]}; players saw {seen}") from None
    over = a.of_type("game_over", table)[-1]
    assert over["reason"] == "normal", over
    assert b.of_type("game_over", table)[-1]["game_id"] == over["game_id"]
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n2, [a, b], game_id_of(over))
    # The game's record (written before game_over went out, or by the new owner) is there,
    # its events ending at that game_over.
    status, record = await get_json(n2, f"/api/games/{over['game_id']}")
    assert status == 200, record
    assert record["events"][-1]["type"] == "game_over"
    assert record["events"][-1]["v"] == over["v"]


async def test_paused_owner_is_fenced_and_lets_go(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """SIGSTOP the owner past its lease; another node takes the table and the game goes on;
    SIGCONT the old owner, whose decision timer has run out meanwhile: none of its writes
    land (each version once in the Redis log, no player sees a version twice with other
    contents) and it no longer serves the table."""
    cluster.flags["decision_time"] = 3  # the paused owner's clock runs out while it sleeps
    n1, n2, _n3 = await cluster.start_many(["n1", "n2", "n3"])
    a = await cluster.player("alice", n1)
    b = await cluster.player("bob", n2)
    table = await seat_two(a, b)  # owned by n1, where alice created it
    await a.switch(n2)  # both players through n2; a watcher stays on n1
    await resync(a, table)
    watcher = await Player.open(n1, await guest_token(n1.ws_url))
    await watcher.watch(table)
    await play_moves([a, b], table, 6)

    n1.pause()
    try:
        # The first decisions wait for the lease to run out and another node to claim it.
        await play_moves([a, b], table, 6, retry_for=TAKEOVER_BOUND)
        v_taken_over = max(p.tables[table].v for p in (a, b))
    finally:
        n1.resume()
    # The old owner wakes up: its timer fires, its write-behind flushes, its watcher asks.
    try:
        answer = await watcher.request({"type": "sync", "table": table, "since": 0},
                                       timeout=TIMEOUT)
        # Served by the table's new owner (forwarded), never from the old owner's memory.
        assert answer["v"] >= v_taken_over, (answer["v"], v_taken_over)
    except RequestFailed:
        pass  # told the table is not served here: fine
    except ConnectionLost:
        pass  # closed: fine
    await play_moves([a, b], table, 4)
    over = await play_to_end([a, b], table)

    assert n1.running, "the old owner crashed instead of letting go"
    assert over["reason"] == "normal", over
    assert_saw_every_version_once([a, b], table)
    assert not watcher.conflicts, watcher.conflicts
    await assert_log_contiguous(cluster, redis_client, table)
    await assert_settled_once(n2, [a, b], game_id_of(over))


# --- rolling restart ------------------------------------------------------------------------


async def test_rolling_restart_of_three_nodes_ends_no_game(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    """30 games on 3 nodes; each node in turn gets SIGTERM (drain), exits and starts again
    while the games go on. No game ends by forfeit or is lost, and no player sees a version
    skipped or twice."""
    games = 30
    nodes = await cluster.start_many(["r1", "r2", "r3"])
    draining: set[str] = set()
    rng = random.Random(11)

    async def new_home(p: Player) -> None:
        # a node that is up and not being restarted (the library would retry one URL)
        while True:
            up = [n for n in cluster.alive() if n.name not in draining]
            if up:
                try:
                    await p.switch(rng.choice(up))
                    return
                except (OSError, ConnectionLost, RequestFailed, RequestTimeout):
                    pass
            await asyncio.sleep(0.05)

    players: list[Player] = list(await asyncio.gather(*(
        cluster.player(f"player{i}", nodes[(i // 2 + i % 2) % 3]) for i in range(2 * games))))
    tables = list(await asyncio.gather(*(
        seat_two(players[2 * g], players[2 * g + 1]) for g in range(games))))
    restarted = asyncio.Event()

    async def come_back(pair: list[Player], table: str) -> None:
        """Move a player whose node closed its socket (drain) and catch up by ``sync``."""
        for p in pair:
            while p.is_closed:
                await new_home(p)
                with contextlib.suppress(ConnectionLost):  # that node went too: again
                    await resync(p, table)

    async def play(g: int) -> dict[str, Any]:
        pair = [players[2 * g], players[2 * g + 1]]
        table = tables[g]

        async def moved(p: Player) -> None:
            await come_back([p], table)

        while await step(pair, table, on_lost=moved, retry_for=TAKEOVER_BOUND):
            await come_back(pair, table)
            if not restarted.is_set():
                await asyncio.sleep(0.05)  # keep the games going through the restarts
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TAKEOVER_BOUND
        while not all(p.of_type("game_over", table) for p in pair):
            assert loop.time() < deadline, f"game_over of {table} not at both players"
            await come_back(pair, table)
            for p in pair:
                if not p.of_type("game_over", table):
                    with contextlib.suppress(RequestFailed, RequestTimeout, ConnectionLost):
                        await p.sync(table)
            await asyncio.sleep(0.1)
        return pair[0].of_type("game_over", table)[-1]

    async def restart_each() -> None:
        try:
            for node in list(nodes):
                await asyncio.sleep(0.5)
                draining.add(node.name)
                await cluster.restart(node)
                draining.discard(node.name)
        finally:
            restarted.set()

    # a TaskGroup: the first failure cancels the rest (no node started after the test)
    async with asyncio.TaskGroup() as group:
        group.create_task(restart_each())
        running = [group.create_task(play(g)) for g in range(games)]
    overs = [task.result() for task in running]

    reasons = [o["reason"] for o in overs]
    assert reasons == ["normal"] * games, reasons
    for g, table in enumerate(tables):
        pair = [players[2 * g], players[2 * g + 1]]
        await assert_log_contiguous(cluster, redis_client, table)
        assert_saw_every_version_once(pair, table)
    node = cluster.alive()[0]
    for p in players:
        assert (await profile(node, p.player)).games == 1, p.player


# --- the node bus ---------------------------------------------------------------------------


async def test_garbage_on_the_node_bus_is_dropped(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    n1, n2 = await cluster.start_many(["n1", "n2"])
    a = await cluster.player("alice", n1)
    b = await cluster.player("bob", n2)  # joins through n2: commands and events cross the bus
    table = await seat_two(a, b)
    await play_moves([a, b], table, 4)
    payloads: list[bytes] = [
        b"", b"\xc1", b"\xff\x00 not msgpack", b"\x92\x01",  # truncated array
        msgpack.packb([1, 2, 3]), msgpack.packb("cmd"), msgpack.packb(None),
        msgpack.packb({}), msgpack.packb({"op": 7}), msgpack.packb({"op": "nonsense"}),
        msgpack.packb({b"op": b"cmd"}), msgpack.packb({1: 2}),
        msgpack.packb({"op": "cmd"}), msgpack.packb({"op": "cmd", "actor": "x", "msg": 5}),
        msgpack.packb({"op": "cmd", "actor": {"player": 1}, "msg": {"type": "roll",
                                                                    "table": table}}),
        msgpack.packb({"op": "cmd", "actor": {}, "msg": {"type": "roll", "table": 5}}),
        msgpack.packb({"op": "deliver", "frame": [1]}),
        msgpack.packb({"op": "deliver", "conns": 5, "frame": {"type": "pong"}}),
        msgpack.packb({"op": "deliver", "player": 5, "frame": {"type": "rating"}}),
        msgpack.packb({"op": "push", "player": None, "frame": None}),
        msgpack.packb({"op": "attach", "table": table, "actor": {}}),
        msgpack.packb({"op": "attach", "table": [table], "actor": None}),
        msgpack.packb({"op": "detach", "table": {"x": 1}, "player": None}),
        msgpack.packb({"op": "unwatch", "table": table, "node": 1, "conn": []}),
        msgpack.packb({"op": "revoke", "tokens": "abc"}),
        msgpack.packb({"op": "revoke", "tokens": [1, None, {}]}),
        msgpack.packb({"op": "cmd", "actor": {"player": "x" * 100_000}, "msg": {}}),
        msgpack.packb({"op": "release", "table": table, "epoch": "not a number"}),
        msgpack.packb({"op": "claim", "table": None}),
        msgpack.packb({"op": "drain", "node": 3.5}),
    ]
    for node in (n1, n2):
        for data in payloads:
            listeners = await cluster.publish(redis_client, node, data)
            assert listeners >= 1, "the node does not listen on its channel"
        for data in payloads[:12]:
            await redis_client.publish(cluster.key("nodes"), data)
    over = await play_to_end([a, b], table)

    assert n1.running and n2.running
    assert over["reason"] == "normal", over
    for node in (n1, n2):
        status, _ = await get_json(node, "/readyz")
        assert status == 200, node.log()[-3000:]
    assert_saw_every_version_once([a, b], table)
    await assert_log_contiguous(cluster, redis_client, table)


# --- two failures seen before the takeover machinery ------------------------------------------


async def test_ticket_of_a_player_queued_through_a_dead_node_leaves_the_pool(
    cluster: Cluster,
) -> None:
    """Today the ticket stays: another node pairs its player, who is shown connected and
    loses a rated game on time-outs without ever seeing it."""
    n1, n2 = await cluster.start_many(["n1", "n2"])
    q = await cluster.player("quinn", n1)
    await q.queue("competitive")

    async def waiting() -> int:
        _, body = await get_json(n2, "/api/matchmaking")
        return sum(int(p["waiting"]) for p in body["pools"] if p["pool"] == "competitive")

    assert await waiting() == 1
    n1.kill()
    await n1.wait()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20.0  # the dead node is noticed within its liveness window
    while await waiting() > 0:
        assert loop.time() < deadline, "the dead node's player is still in the pool"
        await asyncio.sleep(0.1)
    r = await cluster.player("riley", n2)
    await r.queue("competitive")
    await asyncio.sleep(1.0)  # five pairing passes
    assert not r.of_type("match_found") and not r.of_type("game_start"), r.messages
    _, me = await get_json(n2, "/api/players/quinn")
    status, _ = await get_json(n2, "/api/players/quinn/history?ladder=table42")
    assert status == 200
    assert ((me.get("ladders") or {}).get("table42") or {}).get("games", 0) == 0


async def test_request_to_a_table_whose_owner_died_gets_one_answer(
    cluster: Cluster,
) -> None:
    """PROTOCOL.md promises exactly one answer to every request with an ``id``; today a
    table command routed to a dead owner is never answered."""
    n1, n2 = await cluster.start_many(["n1", "n2"])
    a = await cluster.player("alice", n1)
    b = await cluster.player("bob", n2)
    table = await seat_two(a, b)
    await play_moves([a, b], table, 2)
    n1.kill()
    await n1.wait()
    ids = itertools.count(9001)
    asked: list[int] = []
    for message in ({"type": "sync", "table": table, "since": 0}, {"type": "roll",
                                                                      "table": table},
                    {"type": "double", "table": table}, {"type": "watch", "table": table}):
        ref = next(ids)
        asked.append(ref)
        await b.send({**message, "id": ref})

    def answers(ref: int) -> list[dict[str, Any]]:
        return [m for m in b.messages if m.get("ref") == ref]

    await wait_until(lambda: all(answers(ref) for ref in asked), timeout=TAKEOVER_BOUND + 5,
                     what="an answer to every request")
    await asyncio.sleep(0.5)  # time for a second answer, which must not come
    for ref in asked:
        assert len(answers(ref)) == 1, answers(ref)

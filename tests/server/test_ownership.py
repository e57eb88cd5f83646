"""Ownership on several in-process nodes sharing one Redis prefix (server/lobby/ownership.py): a
node that stops (its loops frozen, as a paused or killed process would be) loses its tables
to a live node, requests for them get one answer, its tickets leave the pool, its seats and
watchers at other nodes' tables are cleaned up, a stale owner's writes never land, a drain
hands tables over, and garbage on the node bus is dropped."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import pytest
import redis.asyncio as aioredis
from server_helpers import (
    Client,
    RunningServer,
    StartServer,
    connect,
    default_decision,
    eventually,
    guest,
    register,
    scripted,
    seat_two,
)

from server.app import BUS, OWNERSHIP, PERSISTENCE
from server.lobby.table import Table
from server.store.keys import Keys
from server.store.persistence import _aw
from server.store.queue import MatchmakingQueue
from server.tick import TICK

StartNodes = Callable[..., Awaitable[list[RunningServer]]]


def freeze(server: RunningServer) -> None:
    """As if the node's process stopped (SIGSTOP, a long GC pause, a partition): it renews
    no lease and says nothing on the bus, and hears nothing; its sockets stay open."""
    server.app[TICK].halt()  # every periodic duty: heartbeat, scan, matchmaking...
    for task in server.app[BUS]._tasks:
        task.cancel()


async def lease_node(server: RunningServer, table: str) -> tuple[str, bool] | None:
    lease = await server.app[PERSISTENCE].lease(table)
    return None if lease is None else (lease.node, lease.done)


def answers(client: Client, ref: int) -> list[dict[str, Any]]:
    return [m for m in client.messages if m.get("ref") == ref]


async def test_request_to_a_dead_owner_gets_one_answer_and_the_seat_is_not_held(
    start_nodes: StartNodes,
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"))
    table, _ = await seat_two(one, a, b)  # owned by n1; bob plays through n2
    assert table in one.lobby.tables
    freeze(one)
    ref = b._next_id + 1
    reply = await b.request({"type": "sync", "table": table, "since": 0})
    assert reply["type"] == "error" and reply["code"] == "unavailable", reply
    assert reply["retry_after"] >= 1
    await eventually(lambda: _claimed(two, table))
    await asyncio.sleep(0.3)  # a second answer would have come by now
    assert len(answers(b, ref)) == 1
    again = await b.request({"type": "sync", "table": table, "since": 0})
    assert again["type"] != "error" or again["code"] in ("no_such_table", "unavailable")
    if not hasattr(Table, "restore"):
        # No way to rebuild the game here: it was cleaned up, and bob's seat freed.
        assert await lease_node(two, table) == ("n2", True)
        created = await b.request({"type": "create_table", "mode": "private"})
        assert created["type"] == "table_created", created


async def _claimed(server: RunningServer, table: str) -> bool:
    held = await lease_node(server, table)
    return held is not None and held[0] == server.settings.node_id


async def test_a_dead_nodes_seats_watchers_and_tickets_are_cleaned_up(
    start_nodes: StartNodes, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7), matchmaking_pass_interval=0.05,
                                 matchmaking_hold=0.0)
    c = await connect(two, await register(two, "carol"))
    d = await connect(one, await register(one, "dave"))
    w = await connect(one, await guest(one))
    q = await connect(one, await register(one, "quentin"))
    table, _ = await seat_two(two, c, d)  # owned by n2; dave plays via n1
    watching = await w.request({"type": "watch", "table": table})
    assert watching["type"] == "watching"
    queued = await q.request({"type": "queue", "pool": "boosted"})
    assert queued["type"] == "queued", queued
    queue = MatchmakingQueue(redis_client, prefix=key_prefix)
    assert await queue.ticket("quentin") is not None
    freeze(one)
    gone = await c.expect("player_disconnected", table=table)
    assert gone["player"] == "dave"
    live = two.lobby.tables[table]
    assert not [key for key in live.watchers if key[0] == "n1"]
    await eventually(lambda: _no_ticket(queue, "quentin"))
    # Someone queueing now is not paired with the player who is not there.
    r = await connect(two, await register(two, "rita"))
    assert (await r.request({"type": "queue", "pool": "boosted"}))["type"] == "queued"
    await asyncio.sleep(0.3)
    assert not r.of_type("match_found")


async def _no_ticket(queue: MatchmakingQueue, player: str) -> bool:
    return await queue.ticket(player) is None


async def test_a_stale_owner_writes_nothing_and_lets_go(
    start_nodes: StartNodes, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    table, _ = await seat_two(one, a, b)
    await one.app[PERSISTENCE].flush()
    keys = Keys(key_prefix)
    stored = len(await _aw(redis_client.lrange(keys.table_events(table), 0, -1)))
    freeze(one)
    await eventually(lambda: _claimed(two, table))
    # The paused owner wakes up and goes on as if nothing happened: its write is refused.
    latest = [m for m in a.messages if m.get("table") == table and "state" in m][-1]
    game = latest["state"]["game"]
    side = game["to_act"]
    await (a, b)[side].send({**default_decision(game), "table": table})
    await eventually(lambda: table not in one.lobby.tables)
    events = [msgpack.unpackb(e) for e in
              await _aw(redis_client.lrange(keys.table_events(table), 0, -1))]
    assert len(events) == stored  # the move played at the stale owner is not in the log
    versions = [e["v"] for e in events]
    assert versions == list(range(1, len(versions) + 1))


async def test_a_node_taken_for_dead_lets_go_at_its_next_heartbeat(
    start_nodes: StartNodes, caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing is renewed per table, so an idle table does not tell a paused owner that it
    went elsewhere: the owner's next heartbeat does (its time had run out). It lets go of
    the tables claimed meanwhile; and while it is dead for its peers itself it claims
    nothing of theirs (they may be as late as it is)."""
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"))
    table, _ = await seat_two(one, a, b)
    freeze(one)
    await eventually(lambda: _claimed(two, table))
    ownership = one.app[OWNERSHIP]
    with caplog.at_level(logging.WARNING):
        await ownership.beat_once()
    assert any("heartbeat had run out" in r.getMessage() for r in caplog.records)
    # It lets go once it has read the store's identity (a lost store ends tables otherwise).
    await eventually(lambda: table not in one.lobby.tables)
    freeze(two)
    await eventually(lambda: _dead_to(one, "n2"))
    # One beats no more either: its own last heartbeat is older than a peer's would count.
    await eventually(
        lambda: time.monotonic() - ownership._beat_at >= one.settings.lease_ttl)
    assert await ownership.scan_once() == []
    assert await lease_node(one, table) == ("n2", False)


async def _dead_to(server: RunningServer, node: str) -> bool:
    until = (await server.app[PERSISTENCE].nodes()).get(node)
    return until is not None and until < time.time()


async def test_drain_hands_tables_to_a_live_peer(start_nodes: StartNodes) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"))
    table, _ = await seat_two(one, a, b)
    await one.stop()
    assert await a.wait_closed() == 1012  # service restart: reconnect elsewhere
    await eventually(lambda: _claimed(two, table), timeout=2.0)


async def test_garbage_on_the_node_bus_is_dropped(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    one = await start_server(dice_factory=scripted(7), node_id="n1")
    two = await start_server(dice_factory=scripted(7), node_id="n2")
    channel = Keys(key_prefix).node_channel("n1")
    garbage = [
        b"\xc1\xc1 not msgpack", msgpack.packb([1, 2, 3]), msgpack.packb({"x": 1}),
        msgpack.packb({"op": 7}), msgpack.packb({"op": "no-such-op"}),
        msgpack.packb({"op": "cmd", "actor": 5, "msg": None}),
        msgpack.packb({"op": "cmd", "actor": {"player": "x"}}),
        msgpack.packb({"op": "deliver", "conns": 5, "frame": {"type": "x"}}),
        msgpack.packb({"op": "taken_over", "table": ["x"]}),
        msgpack.packb({"op": "attach", "table": "nope", "actor": None}),
    ]
    with caplog.at_level(logging.WARNING):
        for data in garbage:
            await redis_client.publish(channel, data)
        a = await connect(one, await register(one, "alice"))
        b = await connect(two, await register(two, "bob"))
        table, _ = await seat_two(one, a, b)  # a command from n2 to n1 still goes through
    assert table in one.lobby.tables
    dropped = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) >= 6


async def test_a_draining_node_takes_no_table_and_its_tables_write_nothing(
    start_nodes: StartNodes, redis_client: aioredis.Redis,
) -> None:
    """A node that drains claims no table handed over (it would take back the tables it just
    released, and stop with them), and a table it handed over writes nothing more: a late
    step of it (a timer, a command or a game's end still in flight) is not stored."""
    one, two = await start_nodes(2, dice_factory=scripted(7))
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"))
    table, _ = await seat_two(two, b, a)  # owned by two
    lobby = one.lobby
    lobby.closing = True
    persistence = two.app[PERSISTENCE]
    await _aw(redis_client.hset(persistence.keys.table_lease(table), "free", "1"))
    one.app[OWNERSHIP].tables_released(two.settings.node_id)  # as if two had handed it over
    assert await one.app[OWNERSHIP].scan_once() == []
    assert await lease_node(one, table) == (two.settings.node_id, False)
    lobby.closing = False
    await _aw(redis_client.hdel(persistence.keys.table_lease(table), "free"))

    live = two.lobby.tables[table]
    version = live.version
    handed = await two.lobby.hand_over()
    assert handed == [table]
    assert table not in two.lobby.tables
    live.detach("alice", one.settings.node_id)  # a late step: refused, not buffered
    assert persistence.pending_events == 0 and live.recent[-1][0] == version
    await eventually(lambda: _claimed(one, table), timeout=5.0)
    await persistence.flush()
    keys = Keys(two.settings.key_prefix)
    versions = [msgpack.unpackb(e)["v"] for e in
                await _aw(redis_client.lrange(keys.table_events(table), 0, -1))]
    assert versions == list(range(1, len(versions) + 1))


async def test_closing_the_sockets_at_shutdown_is_bounded() -> None:
    """A socket whose closing handshake never ends (a client that neither reads nor
    answers) is dropped after the timeout: the node's shutdown goes on."""
    from server.app import close_all

    class Stuck:
        aborted = False
        closed_with: tuple[int, str] | None = None

        async def close(self, code: int, reason: str) -> None:
            self.closed_with = (code, reason)
            await asyncio.Event().wait()  # never answered

        def abort(self) -> None:
            self.aborted = True

    class Quick(Stuck):
        async def close(self, code: int, reason: str) -> None:
            self.closed_with = (code, reason)

    stuck, quick = Stuck(), Quick()
    await asyncio.wait_for(close_all([stuck, quick], 1012, "service restart", 0.2),  # type: ignore[list-item]
                           timeout=5.0)
    assert stuck.aborted and not quick.aborted
    assert quick.closed_with == stuck.closed_with == (1012, "service restart")


async def test_a_game_against_the_computer_goes_on_after_a_drain(
    start_nodes: StartNodes,
) -> None:
    """The bot of a ``play_computer`` game runs on the node that started it; when that node
    drains, the table's new owner plays the bot's seat on (same bot id, a new token): the
    game ends normally, not by the bot's absence."""
    from server.app import COMPUTER

    one, two = await start_nodes(2, dice_factory=scripted(7))
    token = await register(one, "human")
    h1 = await connect(one, token)
    h2 = await connect(two, token)  # the human's second socket survives the drain
    answer = await h1.request({"type": "play_computer", "level": "random"})
    table, bot = answer["table"], answer["bot"]
    start = await h2.expect("game_start", table=table)
    side = 0 if start["state"]["seats"][0]["player"] == "human" else 1
    await one.stop()  # drain: the table goes to two
    await eventually(lambda: table in two.lobby.tables, timeout=5.0)
    await eventually(lambda: table in two.app[COMPUTER].games, timeout=5.0)
    assert two.app[COMPUTER].games[table].bot == bot

    acted = -1
    message: dict[str, Any] = start
    sync = await h2.request({"type": "sync", "table": table, "since": 0})
    message = {**sync, "type": "sync"}
    for _ in range(4000):
        if message.get("table") == table:
            # A decision sent from a state a later event had already replaced (a sync
            # answer and the events around the takeover) is refused as out of turn: the
            # next state asks again.
            assert message.get("type") != "error" or message.get("code") in (
                "wrong_phase", "not_your_turn"), message
            if message["type"] == "game_over":
                break
            state = message.get("state")
            if isinstance(state, dict) and state.get("status") == "playing" and "v" in message:
                game = state["game"]
                if game["to_act"] == side and message["v"] > acted:
                    acted = message["v"]
                    await h2.send({**default_decision(game), "table": table})
        message = await h2.next(30.0)
    else:  # pragma: no cover
        raise AssertionError("no game_over")
    assert message["reason"] == "normal", message


async def test_a_node_taken_for_dead_and_seen_again_gets_its_players_back_on_their_seats(
    start_nodes: StartNodes,
) -> None:
    """A node only paused (a long GC, Redis away longer than a lease) was taken for dead: the
    table's owner took its players off their seats. Seen alive again, it is asked to attach
    them again: they get ``resume`` and the table says they are back."""
    one, two = await start_nodes(2, dice_factory=scripted(7))
    c = await connect(two, await register(two, "carol"))
    d = await connect(one, await register(one, "dave"))
    table, _ = await seat_two(two, c, d)  # owned by n2; dave plays through n1
    await two.lobby.node_died(one.lobby.node_id)  # as after a missed heartbeat
    gone = await c.expect("player_disconnected", table=table)
    assert gone["player"] == "dave"
    two.lobby.node_back(one.lobby.node_id)
    resume = await d.expect("resume", table=table)
    assert resume["side"] == 1
    back = await c.expect("player_reconnected", table=table)
    assert back["player"] == "dave"
    seat = two.lobby.tables[table].machine.seats[1]
    assert seat is not None and one.lobby.node_id in seat.nodes

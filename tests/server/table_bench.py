"""A real table (``server/lobby/table.py``) driven below the socket: a fake outbox that keeps
what each player was sent, the virtual clock, a spawner the test awaits, a host that keeps
what the table told it, and the real store (Redis) underneath.

``bench = await TableBench.open(redis_client, key_prefix)``; ``bench.table(...)`` opens a
table seated by two players; ``bench.advance(seconds)`` moves the clock and carries out
what the timers started (store, settle, announce); ``bench.sent("alice")`` is what reached
alice's sockets, in order; ``bench.act(table, "alice", {...})`` is a request of alice's, and
``bench.play_out(table)`` plays both seats (default decisions) to the game's or match's end,
moving the clock over the pause between the games of a match.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from rating_plugin.store import RatingStore
from server.client import default_decision
from server.config import Settings
from server.lobby.clock import VirtualClock
from server.lobby.delivery import Delivery
from server.lobby.mutes import ChatMutes
from server.lobby.pair_limit import PairLimit
from server.lobby.requests import ForwardedRequests
from server.lobby.table import Table
from server.lobby.table_deps import TableDeps
from server.metrics import Metrics
from server.protocol.codec import Outgoing
from server.protocol.messages import TableMessage, TableMode, parse_message
from server.protocol.node_messages import Actor, NodeMessage
from server.rules import ScriptedDice
from server.store.games import GameRecords
from server.store.keys import Keys
from server.store.persistence import Persistence
from server.store.record_budget import RecordBudget

NODE = "n1"


class FakeOutbox:
    """The sockets of this node, as the lobby sees them: what each player was sent (to any
    of its sockets; one named ``connect``-ed)."""

    def __init__(self) -> None:
        self.by_player: dict[str, list[dict[str, Any]]] = {}
        self.sockets: dict[str, str] = {}  # socket id -> its player
        self.delivered: set[tuple[str, str]] = set()  # (socket id, inbox event id)

    def connect(self, player: str, conn_id: str) -> None:
        self.sockets[conn_id] = player

    def push_player(self, player: str, out: Outgoing) -> bool:
        self.by_player.setdefault(player, []).append(out.obj)
        return True

    def push_conn_id(self, conn_id: str, out: Outgoing) -> bool:
        who = self.sockets.get(conn_id, f"socket:{conn_id}")
        self.by_player.setdefault(who, []).append(out.obj)
        return True

    def push_unique(self, players: Iterable[str], conn_ids: Iterable[str],
                    out: Outgoing) -> None:
        for player in set(players):
            self.push_player(player, out)
        for conn_id in set(conn_ids):
            self.push_conn_id(conn_id, out)

    def begin_gather(self) -> None:
        pass

    def end_gather(self) -> None:
        pass

    def players(self) -> list[str]:
        return list(self.by_player)

    def sockets_of(self, player: str) -> list[str]:
        return [conn for conn, who in self.sockets.items() if who == player]

    def actor_of(self, conn_id: str) -> Actor | None:
        return None

    def player_of(self, conn_id: str) -> str | None:
        return self.sockets.get(conn_id)

    def is_writable(self, conn_id: str) -> bool:
        return conn_id in self.sockets

    def mark_delivered(self, conn_id: str, event_id: str) -> bool:
        if conn_id not in self.sockets or (conn_id, event_id) in self.delivered:
            return False
        self.delivered.add((conn_id, event_id))
        return True

    def watching(self, conn_id: str) -> frozenset[str]:
        return frozenset()

    def watch(self, conn_id: str, table_id: str) -> None:
        pass

    def unwatch(self, conn_id: str, table_ids: Iterable[str]) -> None:
        pass

    def charge(self, conn_id: str, messages: float) -> None:
        pass

    def end_token(self, digest: str, reason: str) -> int:
        return 0

    def end_all_tokens(self, reason: str) -> int:
        return 0


class FakeBus:
    """The node bus: nothing leaves this node (every player is here)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, NodeMessage]] = []

    def send(self, node: str, message: NodeMessage, token: Any = None) -> None:
        self.sent.append((node, message))

    def broadcast(self, message: NodeMessage) -> None:
        self.sent.append(("*", message))


class OnePeer:
    """The node's view of the others: every node counts as alive until the test says when
    its heartbeat ran out (:meth:`died`)."""

    def __init__(self) -> None:
        self.peers: dict[str, float] = {}
        self.dead_nodes: set[str] = set()

    def died(self, node: str, at: float) -> None:
        """``node``'s heartbeat ran out at Unix time ``at``."""
        self.peers[node] = at
        self.dead_nodes.add(node)

    def is_live(self, node: str) -> bool:
        return node not in self.dead_nodes

    def is_fresh(self, node: str) -> bool:
        return node not in self.dead_nodes

    def mark_dead(self, node: str) -> bool:
        return False

    def back(self, node: str) -> None:
        pass


class Spawned:
    """The background work a table starts, run as tasks the test awaits."""

    def __init__(self) -> None:
        self.running: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.running.add(asyncio.ensure_future(coro))

    async def settle(self) -> None:
        while self.running:
            done, _ = await asyncio.wait(self.running, timeout=10.0)
            assert done, "background work did not finish"
            self.running -= done
            for task in done:
                task.result()


class RecordingHost:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def changed(self, table: Table) -> None:
        self.calls.append(("changed", str(table.status)))

    def closed(self, table: Table, delay: float | None = None) -> None:
        self.calls.append(("closed", table.id))

    def lost(self, table: Table) -> None:
        self.calls.append(("lost", table.id))


class TableBench:
    """See the module docstring."""

    def __init__(self, settings: Settings, persistence: Persistence, deps: TableDeps,
                 clock: VirtualClock, outbox: FakeOutbox, spawned: Spawned,
                 peers: OnePeer) -> None:
        self.settings = settings
        self.persistence = persistence
        self.deps = deps
        self.clock = clock
        self.outbox = outbox
        self.spawned = spawned
        self.peers = peers
        self.node = settings.node_id
        self.host = RecordingHost()
        self.actors: dict[str, Actor] = {}

    @classmethod
    async def open(cls, redis: aioredis.Redis, key_prefix: str, *, node: str = NODE,
                   **settings: Any) -> TableBench:
        """A bench as node ``node`` (two benches on one Redis and prefix are two nodes)."""
        config = Settings(redis_url="redis://unused", key_prefix=key_prefix, node_id=node,
                          **settings)
        keys = Keys(key_prefix)
        metrics = Metrics(enabled=False)
        persistence = Persistence(redis, keys, config, metrics)
        await persistence.load_scripts()
        await persistence.claim_store()
        clock = VirtualClock()
        outbox = FakeOutbox()
        spawned = Spawned()
        peers = OnePeer()
        ratings = RatingStore(redis, key_prefix)
        delivery = Delivery(config, outbox, FakeBus(), persistence=persistence, tasks=spawned,
                            metrics=metrics, mutes=ChatMutes(),
                            requests=ForwardedRequests(config, outbox, clock, peers))
        deps = TableDeps(
            settings=config, persistence=persistence, delivery=delivery, clock=clock,
            tasks=spawned, metrics=metrics, records=GameRecords(redis, keys, config, now=clock.now),
            record_budget=RecordBudget(redis, keys, config), ratings=ratings,
            pair_limit=PairLimit(config, ratings, clock), peers=peers,
            dice_factory=lambda: ScriptedDice([3, 1] * 500))
        return cls(config, persistence, deps, clock, outbox, spawned, peers)

    async def table(self, table_id: str, players: tuple[str, str] = ("alice", "bob"),
                    mode: TableMode = TableMode.PRIVATE, *, match_length: int = 0,
                    addresses: tuple[str, str] = ("10.0.1.1", "10.0.2.1"),
                    guests: tuple[bool, bool] = (False, False)) -> Table:
        """A table of ``mode`` owned here, both players seated (on this node, from
        ``addresses``, guests or not) and playing."""
        node = self.node
        epoch, _ = await self.persistence.claim(table_id, node, new=True)
        self.persistence.adopt(table_id, epoch)
        table = Table(self.deps, self.host, table_id=table_id, mode=mode,
                      match_length=match_length, tournament_id=None)
        for player, address, guest in zip(players, addresses, guests, strict=True):
            self.actors[player] = Actor(player, player, guest, address, node, f"c-{player}")
            self.outbox.connect(player, f"c-{player}")
            await self.persistence.presence_join(player, node, address)
        table.seat_pair([(self.actors[p], {node}) for p in players])
        await self.settle()
        return table

    async def take_over(self, table_id: str) -> Table:
        """Claim ``table_id`` from its owner (found dead, see :meth:`OnePeer.died`) and
        rebuild it here from its stored log, as a node's takeover does."""
        lease = await self.persistence.lease(table_id)
        assert lease is not None
        epoch, _ = await self.persistence.claim(table_id, self.node, new=False,
                                                epoch=lease.epoch)
        assert epoch, "not claimed"
        self.persistence.adopt(table_id, epoch)
        table = await Table.restore(self.deps, self.host, table_id,
                                    await self.persistence.snapshot(table_id),
                                    await self.persistence.events_since(table_id, 0),
                                    self.clock.now())
        await self.settle()
        return table

    async def act(self, table: Table, player: str, message: dict[str, Any]) -> None:
        """``player``'s request about ``table`` (its fields but the table's), carried out."""
        parsed = parse_message({**message, "table": table.id})
        assert isinstance(parsed, TableMessage)
        await table.handle(self.actors[player], parsed)
        await self.settle()

    async def play_out(self, table: Table, *, until: str = "game_over",
                       decide: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
                       max_steps: int = 5000) -> dict[str, Any]:
        """Play both seats from the table's state (``decide(state)``, else the default
        decision) until an event of type ``until`` reaches the table's first player; the
        clock moves to the next timer when nobody is to act (the pause between the games
        of a match). Returns that event."""
        first = table.state()["seats"][0]["player"]
        seen = len(self.sent(first))
        for _ in range(max_steps):
            done = [m for m in self.sent(first)[seen:]
                    if m.get("type") == until and m.get("table") == table.id]
            if done:
                return done[0]
            state = table.state()
            game = state.get("game")
            if state["status"] == "playing" and game and game.get("to_act") is not None:
                seat = state["seats"][game["to_act"]]
                action = decide(state) if decide is not None else None
                await self.act(table, seat["player"], action or default_decision(game))
            else:
                due = self.clock.next_due()
                assert due is not None, f"nobody to act and no timer ({state['status']})"
                await self.advance(due - self.clock.monotonic())
        raise AssertionError(f"no {until} after {max_steps} steps")

    async def settle(self) -> None:
        """Carry out what is in flight: store the buffered events (the table announces them
        then) and finish the background work, until nothing is left."""
        for _ in range(50):
            try:
                await self.persistence.flush()
                stored = True
            except (RedisError, OSError):  # Redis away: the events stay buffered
                stored = False
            await self.spawned.settle()
            if (not stored or not self.persistence.pending_events) \
                    and not self.spawned.running:
                return
        raise AssertionError("the table never settled")

    async def advance(self, seconds: float) -> None:
        """Move the clock by ``seconds`` (the timers due fire, in order), then settle."""
        step = self.clock.next_due()
        target = self.clock.monotonic() + seconds
        while step is not None and step <= target:
            self.clock.advance(step - self.clock.monotonic())
            await self.settle()
            step = self.clock.next_due()
        self.clock.advance(target - self.clock.monotonic())
        await self.settle()

    def sent(self, player: str, kind: str | None = None) -> list[dict[str, Any]]:
        """What reached ``player``'s sockets (of type ``kind``)."""
        return [m for m in self.outbox.by_player.get(player, [])
                if kind is None or m.get("type") == kind]

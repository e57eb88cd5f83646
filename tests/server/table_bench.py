"""A real table (``server/lobby/table.py``) driven below the socket: a fake outbox that keeps
what each player was sent, the virtual clock, a spawner the test awaits, a host that keeps
what the table told it, and the real store (Redis) underneath.

``bench = await TableBench.open(redis_client, key_prefix)``; ``bench.table(...)`` opens a
table seated by two players; ``bench.advance(seconds)`` moves the clock and carries out
what the timers started (store, settle, announce); ``bench.sent("alice")`` is what reached
alice's sockets, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any

import redis.asyncio as aioredis

from rating_plugin.store import RatingStore
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
from server.protocol.messages import TableMode
from server.protocol.node_messages import Actor, NodeMessage
from server.rules import ScriptedDice
from server.store.games import GameRecords
from server.store.keys import Keys
from server.store.persistence import Persistence
from server.store.record_budget import RecordBudget

NODE = "n1"


class FakeOutbox:
    """The sockets of this node, as the lobby sees them: what each player was sent."""

    def __init__(self) -> None:
        self.by_player: dict[str, list[dict[str, Any]]] = {}

    def push_player(self, player: str, out: Outgoing) -> bool:
        self.by_player.setdefault(player, []).append(out.obj)
        return True

    def push_conn_id(self, conn_id: str, out: Outgoing) -> bool:
        self.by_player.setdefault(f"socket:{conn_id}", []).append(out.obj)
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
        return []

    def actor_of(self, conn_id: str) -> Actor | None:
        return None

    def player_of(self, conn_id: str) -> str | None:
        return None

    def is_writable(self, conn_id: str) -> bool:
        return False

    def mark_delivered(self, conn_id: str, event_id: str) -> bool:
        return False

    def watching(self, conn_id: str) -> set[str]:
        return set()

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
    """A node alone: every node counts as alive."""

    def __init__(self) -> None:
        self.peers: dict[str, float] = {}
        self.dead_nodes: set[str] = set()

    def is_live(self, node: str) -> bool:
        return True

    def is_fresh(self, node: str) -> bool:
        return True

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
                 clock: VirtualClock, outbox: FakeOutbox, spawned: Spawned) -> None:
        self.settings = settings
        self.persistence = persistence
        self.deps = deps
        self.clock = clock
        self.outbox = outbox
        self.spawned = spawned
        self.host = RecordingHost()

    @classmethod
    async def open(cls, redis: aioredis.Redis, key_prefix: str, **settings: Any
                   ) -> TableBench:
        config = Settings(redis_url="redis://unused", key_prefix=key_prefix, node_id=NODE,
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
            tasks=spawned, metrics=metrics, records=GameRecords(redis, keys, config),
            record_budget=RecordBudget(redis, keys, config), ratings=ratings,
            pair_limit=PairLimit(config, ratings, clock), peers=peers,
            dice_factory=lambda: ScriptedDice([3, 1] * 500))
        return cls(config, persistence, deps, clock, outbox, spawned)

    async def table(self, table_id: str, players: tuple[str, str] = ("alice", "bob"),
                    mode: TableMode = TableMode.PRIVATE) -> Table:
        """A table of ``mode`` owned here, both players seated (on this node) and playing."""
        epoch, _ = await self.persistence.claim(table_id, NODE, new=True)
        self.persistence.adopt(table_id, epoch)
        table = Table(self.deps, self.host, table_id=table_id, mode=mode, match_length=0,
                      tournament_id=None)
        table.seat_pair([(Actor(p, p, False, f"10.0.0.{i}", NODE, ""), {NODE})
                         for i, p in enumerate(players, 1)])
        await self.settle()
        return table

    async def settle(self) -> None:
        """Carry out what is in flight: store the buffered events (the table announces them
        then) and finish the background work, until nothing is left."""
        for _ in range(50):
            await self.persistence.flush()
            await self.spawned.settle()
            if not self.persistence.pending_events and not self.spawned.running:
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

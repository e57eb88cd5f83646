"""Takeover: tables this node gains from other nodes and loses to them, and dead nodes.

The ownership duties (``ownership.py``: heartbeat, takeover scan) decide when; this module does
the lobby's part. A table claimed from a dead or draining node is rebuilt from its log, or
cleaned up when it has no game to carry on (:meth:`Takeover.restore_table`), and every node is told
(``taken_over``); a dead node's seats, watchers and forwarded requests are cleaned up
(:meth:`Takeover.node_died`); a drain gives every table away (:meth:`Takeover.hand_over`); a
table whose write was refused stops here (:meth:`Takeover.table_fenced`), and when the store
itself was lost every table ends (:meth:`Takeover.store_lost`).

A log with a gap (a Redis replica promoted before it had every event: PROTOCOL.md §13)
never kills a table. Its owner, alive, writes the missing events again from memory
(:meth:`Takeover.log_gap`, asked by the flush the store refused). A node taking over a log
with a gap carries on from the events before it: the log is rewritten to them, and every
player and watcher gets ``table_rewound`` with the table's full state
(:meth:`Takeover.restore_table`). A table whose missing events are nowhere, or whose log does
not replay at all, ends with ``table_closed`` (reason ``log_lost``), told to its players.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

import msgpack
from redis.exceptions import RedisError

from server.lobby.forwarding import Forwarding
from server.lobby.lifecycle import TableLife
from server.lobby.listeners import LobbyListeners
from server.lobby.listing import Listing
from server.lobby.ports import NodeSender, Outbox, Peers
from server.lobby.registry import TableRegistry
from server.lobby.requests import ForwardedRequests
from server.lobby.table import Table, TableStatus
from server.lobby.table_deps import TableDeps
from server.lobby.tasks import Tasks
from server.protocol import node_messages as ops
from server.protocol.codec import Outgoing

log = logging.getLogger(__name__)

REATTACH_FOR = 30.0
"""Seconds the players here are attached again, try after try, once the bus is back."""
LOG_LOST = "log_lost"
"""``table_closed`` reason: events of the table's log are lost (see the module)."""


def before_gap(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` (in version order, each once) up to the first missing version."""
    for i in range(1, len(events)):
        if int(events[i]["v"]) != int(events[i - 1]["v"]) + 1:
            return events[:i]
    return events


class Takeover:
    """The lobby's side of table ownership on this node: given the parts a table uses
    (``deps``), the registry, the tables' lifecycle, the forwarding and the sockets here."""

    def __init__(self, deps: TableDeps, *, registry: TableRegistry, life: TableLife,
                 listing: Listing, forwarding: Forwarding, requests: ForwardedRequests,
                 outbox: Outbox, bus: NodeSender, peers: Peers, tasks: Tasks,
                 listeners: LobbyListeners) -> None:
        self.deps = deps
        self.node_id = deps.node_id
        self.persistence = deps.persistence
        self.registry = registry
        self.life = life
        self.listing = listing
        self.forwarding = forwarding
        self.requests = requests
        self.outbox = outbox
        self.bus = bus
        self.peers = peers
        self.tasks = tasks
        self.listeners = listeners
        self.persistence.on_gap = self.log_gap

    def table_stored(self, table_id: str, version: int) -> None:
        """The flush stored the table's events up to ``version``: it may announce them."""
        table = self.registry.get(table_id)
        if table is not None:
            table.stored(version)

    def table_fenced(self, table_id: str) -> None:
        """A write of the table was refused: another node owns it now, or the store lost the
        table's lease with everything else (emptied, replaced). The store is checked first:
        lost, every table ends with ``store_lost`` (:meth:`store_lost`); else the table stops
        and is forgotten here (its seats belong to the table, which lives on at its new
        owner)."""
        if table_id in self.registry:
            self.tasks.spawn(self._fenced_or_lost(table_id))

    async def _fenced_or_lost(self, table_id: str) -> None:
        persistence = self.persistence
        _up, lost = await persistence.check_store()
        if lost:
            persistence.store_lost()  # it calls store_lost below; the monitor claims anew
        table = self.registry.get(table_id)
        if table is not None:
            table.fenced()  # it calls TableLife.lost
            if not lost:  # its players' sockets here play on at its new owner
                await self.attach_sockets(table_id, table.seated_players())

    def store_lost(self) -> None:
        """The store was emptied or replaced (``Persistence.check_store``): every table of
        this node ends with ``table_closed`` (reason ``store_lost``, no result, no rating
        change), told at once to its players and watchers; then every authenticated socket
        here is closed with 4001 (reason "store lost"): their tokens and accounts are gone,
        so nothing is accepted from them. Each node does this on its own when it notices."""
        tables = list(self.registry.tables.values())
        for table in tables:
            table.end_store_lost()
            self.life.lost(table)
        self.registry.forget_owners()
        closed = self.outbox.end_all_tokens("store lost")
        log.error("store lost: %d tables ended, %d sockets closed", len(tables), closed)

    async def restore_table(self, table_id: str, snapshot: dict[str, Any] | None,
                            events: list[dict[str, Any]]) -> Table | None:
        """This node just claimed ``table_id`` (an owner died or handed it over): rebuild it
        from its stored log and carry on, or, for a table with no game to carry on (open,
        closed, or no way to rebuild it), clean it up: seats released, unlisted, its lease
        done. Returns the live table, or None when it was cleaned up."""
        registry = self.registry
        summary = dict((snapshot or {}).get("summary") or {})
        status = str(summary.get("status") or "")
        players = [str(p) for p in summary.get("players") or () if p]
        table: Table | None = None
        kept = before_gap(events)
        if status in ("playing", "finished") and kept:
            try:
                table = await Table.restore(self.deps, self.life, table_id, snapshot, kept,
                                            self.deps.clock.now())
            except ValueError:
                # A log that does not replay (another version's format, a log trimmed in
                # the middle of a game): cleaned up below, so its players are free to play
                # again instead of holding seats at a table nobody can run.
                log.exception("table %s: its log does not replay; the game is lost", table_id)
        if table is not None and len(kept) < len(events):
            await self._rewound(table, kept, int(events[-1]["v"]))
        if table is not None:
            if registry.closing:
                # This node began to drain while it rebuilt the table: hand it on (hand_over
                # has gone past the tables it had).
                table.let_go()
                await self.persistence.release(table_id, done=False)
                self.bus.broadcast(ops.Released(node=self.node_id))
                return None
            registry.add(table)
            log.info("table %s taken over at version %s", table_id, table.version)
            if table.status is TableStatus.PLAYING:
                for listener in self.listeners.restored:
                    try:
                        listener(table)
                    except Exception:
                        log.exception("table %s: resuming after the takeover failed",
                                      table_id)
            if table.status in (TableStatus.OPEN, TableStatus.PLAYING):
                await self.listing.publish(table)
            self.bus.broadcast(ops.TakenOver(table=table_id, node=self.node_id,
                                             players=table.seated_players()))
            await self.taken_over(table_id, self.node_id, table.seated_players())
            return table
        if status == "playing":
            log.warning("table %s: game in progress lost with its node (no log to rebuild "
                        "it from, or a log that does not replay)", table_id)
            for player in players:  # wherever they are: the table is gone for good
                await self.deps.delivery.push_to_player(player, {
                    "type": "table_closed", "table": table_id, "reason": LOG_LOST})
        await self._close(table_id, players, str(summary.get("mode") or "") or None)
        self.bus.broadcast(ops.TakenOver(table=table_id, node=self.node_id, players=[]))
        await self.taken_over(table_id, self.node_id, [])
        return None

    async def _rewound(self, table: Table, kept: list[dict[str, Any]], logged: int) -> None:
        """``table`` was rebuilt from the events before a gap in its log (the last logged
        being ``logged``): the log is rewritten to them, so the table's next event follows,
        and its players and watchers get ``table_rewound`` with its full state."""
        log.warning("table %s: its log misses events after v%d (up to v%d logged): going on "
                    "from v%d", table.id, table.version, logged, table.version)
        await self.persistence.rewrite_log(table.id, table.version,
                                           [msgpack.packb(e) for e in kept])
        table.announcer.broadcast(Outgoing({
            "type": "table_rewound", "table": table.id, "v": table.version,
            "logged": logged, "summary": table.summary(), "state": table.machine.handout()}))

    def log_gap(self, table_id: str, stored: int, first: int) -> list[bytes] | None:
        """The store holds ``table_id``'s log only up to ``stored`` and the flush wants to
        write from ``first`` on: the events between, from the table's memory (msgpack, as
        logged). None when they are not all there: the table ends (``table_closed``,
        ``log_lost``), its seats freed."""
        table = self.registry.get(table_id)
        if table is None:
            return None
        missing = [packed for v, packed in table.events.window if stored < v < first]
        if len(missing) == first - 1 - stored:
            return missing
        log.error("table %s: the store lost v%d-v%d of its log and they are not in memory "
                  "any more: the table ends", table_id, stored + 1, first - 1)
        players = table.seated_players()
        mode = str(table.summary().get("mode") or "") or None
        table.end_store_lost(LOG_LOST)
        self.life.lost(table)
        self.tasks.spawn(self._close(table_id, players, mode))
        return None

    async def _close(self, table_id: str, players: list[str], mode: str | None) -> None:
        """A table with no game to carry on: its seats released, unlisted, its lease done."""
        for player in players:
            await self.persistence.release_seat(player, table_id)
        await self.persistence.unlist_table(table_id, mode)
        await self.persistence.release(table_id, done=True)

    async def wind_up_at_stop(self) -> None:
        """The node stops (its timers stopped, what was buffered stored): each table still
        here with no game to carry on is done now (finished and settled, closed, or open
        with nobody to play), so no node claims it later; a game in progress stays for the
        node that takes it over (its log is stored)."""
        for table in list(self.registry.tables.values()):
            status = table.status
            if status is TableStatus.OPEN:
                await self._close(table.id, table.seated_players(),
                                  str(table.summary().get("mode") or "") or None)
            elif status is TableStatus.CLOSED or table.wound_up:
                await self.persistence.release(table.id, done=True)

    async def taken_over(self, table_id: str, node: str, players: list[str]) -> None:
        """``node`` took ``table_id`` over: route there from now on, answer the requests that
        waited for the old owner (``unavailable``: retry now), and attach this node's
        sockets of its seated players (they get ``resume``)."""
        self.registry.remember_owner(table_id, node)
        if node != self.node_id and table_id in self.registry:
            self.table_fenced(table_id)  # this node thought it owned it: it does not
        self.requests.sweep(table=table_id, retry_after=1.0)
        await self.attach_sockets(table_id, players)

    async def attach_sockets(self, table_id: str, players: Iterable[str]) -> None:
        """Attach this node's sockets of ``players`` (seated at ``table_id``) to the table
        wherever it is served now (they get ``resume`` from it): a table this node lost
        (fenced after a pause, taken over) goes on for its players here without a
        reconnect, their commands forwarded to its new owner."""
        for player in players:
            actor = self._actor_of(player)
            if actor is not None:
                try:
                    await self.forwarding.attach(actor, table_id)
                except (RedisError, OSError) as exc:  # the player's next sync attaches them
                    log.warning("table %s: %s not attached here: %s", table_id, player, exc)

    async def taken_over_elsewhere(self, message: ops.TakenOver) -> None:
        """A ``taken_over`` broadcast (its sender hears it too: left out)."""
        if message.node != self.node_id:
            await self.taken_over(message.table, message.node, message.players)

    async def node_died(self, node: str, *, stopped: bool = False) -> None:
        """``node`` stopped saying it is alive: its sockets are gone. Its players leave the
        seats of this node's tables (their node-loss grace starts, from the end of the node's
        last heartbeat: the node's fault is not theirs), its watchers go, requests
        waiting for its answer are answered, and the ``node_dead`` listeners are told
        (matchmaking drops the tickets queued through it). ``stopped``: it stopped cleanly
        (shutdown), so little is left of it and its end is no news."""
        if not self.peers.mark_dead(node):
            return
        if stopped:
            log.debug("node %s stopped: cleaning up after it", node)
        else:
            log.warning("node %s is gone: cleaning up after it", node)
        lost_at = min(self.peers.peers.get(node, math.inf), self.deps.clock.now())
        for table in list(self.registry.tables.values()):
            for key in [k for k in table.watchers if k[0] == node]:
                table.unwatch(*key)
            for player in table.seated_players():
                table.detach(player, node, lost_at=lost_at)
        self.requests.sweep(node=node)
        for listener in self.listeners.node_dead:
            try:
                await listener(node)
            except (RedisError, OSError) as exc:
                log.warning("cleaning up after node %s: %s", node, exc)

    def bus_back(self) -> None:
        """The node bus listens again after its cluster node failed (what was published
        to this node meanwhile is lost): this node's seated players are attached to their
        tables again, and get each table's full state (``resume``)."""
        self.tasks.spawn(self._reattach_quietly())

    async def _reattach_quietly(self) -> None:
        """:meth:`reattach`, tried again while the store is away (the failover that moved
        the bus may not be over), for up to :data:`REATTACH_FOR` seconds."""
        clock = self.deps.clock
        until = clock.monotonic() + REATTACH_FOR
        delay = 0.1
        while True:
            try:
                await self.reattach()
                return
            except (RedisError, OSError) as exc:
                if clock.monotonic() + delay > until:  # their next sync attaches them
                    log.warning("attaching players again after the bus came back failed: "
                                "%s", exc)
                    return
            await clock.sleep(delay)
            delay = min(1.0, delay * 2)

    async def reattach(self) -> None:
        """Attach every seated player with a socket here to its table again (a peer saw
        this node dead and took its players off their seats)."""
        for player in list(self.outbox.players()):
            actor = self._actor_of(player)
            if actor is None:
                continue
            seat = await self.persistence.seat_of(player)
            if seat is not None:
                await self.forwarding.attach(actor, seat)

    def _actor_of(self, player: str) -> ops.Actor | None:
        """The actor of one of ``player``'s sockets here (None: none here)."""
        for conn_id in self.outbox.sockets_of(player):
            actor = self.outbox.actor_of(conn_id)
            if actor is not None:
                return actor
        return None

    async def hand_over(self) -> list[str]:
        """Drain (SIGTERM with live peers): stop every table here, store what is buffered,
        and give each lease back so a peer claims the table at once; peers are told. The
        tables are forgotten here (their commands go to the new owners). Returns the ids
        handed over."""
        registry = self.registry
        registry.closing = True
        for table in registry.tables.values():
            table.shutdown()
        # Settlements in flight finish first (they write under the lease).
        await self.tasks.wait(self.deps.settings.shutdown_timeout)
        await self.persistence.flush(everything=True)
        handed: list[str] = []
        while registry.tables:
            table = next(iter(registry.tables.values()))
            # Stopped here first: nothing of it is written or announced by this node any more
            # (a settlement or a command still in flight is refused, not written late).
            over = table.status is TableStatus.CLOSED or table.wound_up
            table.let_go(finished=over)
            self.life.lost(table)
            try:
                if await self.persistence.release(table.id, done=over) and not over:
                    handed.append(table.id)
            except (RedisError, OSError) as exc:
                log.warning("drain: table %s not handed over (%s); its lease will expire",
                            table.id, exc)
        if handed:
            self.bus.broadcast(ops.Released(node=self.node_id))
        log.info("drain: %d tables handed over to peers", len(handed))
        return handed

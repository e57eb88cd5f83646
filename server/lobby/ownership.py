"""Fenced table ownership on one node: lease renewal, the takeover scan, node deaths.

Every live table has an owner lease in Redis (``{t:T}:lease``: node, epoch, expiry; the
scripts are ``server/store/lua/lease_*.lua``). The node that makes a table claims its first lease
(epoch 1); :class:`Ownership` then

* renews every lease this node holds each ``lease_renew`` seconds, in one pipeline, with
  this node's heartbeat in the node set (``{nodes}:alive``) and the lease index
  (``{leases}:index``, a sorted set of live tables scored by lease expiry: a hint, each lease
  is the truth). A renewal refused (another node claimed the table after this one was paused
  past its lease) makes the table stop here: its writes are refused anyway
  (``fenced_append.lua``), so it can never write again for that table;
* every ``takeover_scan`` seconds reads the node set (a node whose heartbeat is older than
  ``lease_ttl`` is dead: :meth:`Lobby.node_died` cleans up after it once) and the index's
  expired entries, and claims each such table (``lease_claim.lua``: one claimant wins, epoch
  + 1). The winner reads the table's snapshot and event log and hands them to
  :meth:`Lobby.restore_table`, which rebuilds the game (``Table.restore``) or cleans up a
  table with no game to carry on. A peer that hands its tables over on SIGTERM
  (:meth:`Lobby.hand_over`) tells the others on the bus, and they scan at once.

Takeover time. The owner renews at ``t0`` and dies just after; its lease runs out at
``t0 + lease_ttl``; the next scan of some live node comes within ``takeover_scan`` of that,
and the claim, the two reads and the rebuild take a few round trips. So a table is taken
over at most ``lease_ttl + takeover_scan`` (+ a few ms) after its owner's last renewal, and at
least ``lease_ttl - lease_renew`` after its owner's death: 4-7 s with the defaults (6 s, 2 s,
1 s). A drained table (SIGTERM) is claimed by the first peer that hears of it: milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from redis.exceptions import RedisError

from server.config import Settings
from server.lobby.routing import Lobby
from server.logs import every
from server.store.persistence import Persistence

log = logging.getLogger(__name__)

SCAN_LIMIT = 64
SCAN_PASSES = 16
"""Passes of one scan at most (SCAN_LIMIT tables each) while expired leases remain."""
"""Expired leases one scan claims at most (the next scan takes the rest)."""
DEAD_NODE_KEEP = 3600.0
"""Seconds a dead node stays in the node set (so every peer sees it dead once)."""


class Ownership:
    """The lease loops of one node. Needs the node's settings, persistence and lobby."""

    def __init__(self, settings: Settings, persistence: Persistence, lobby: Lobby) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.persistence = persistence
        self.lobby = lobby
        self._tasks: list[asyncio.Task[None]] = []
        self._scan_now = asyncio.Event()
        self._claiming: set[str] = set()
        lobby.on_released = self._scan_now.set

    async def start(self) -> None:
        """Say this node is alive (once, at once), then run the loops."""
        await self.renew_once()
        self._tasks = [
            asyncio.create_task(self._renew_loop(), name="lease-renew"),
            asyncio.create_task(self._scan_loop(), name="lease-scan"),
        ]

    async def stop(self) -> None:
        """Stop the loops and say this node is gone (peers clean up after it at once)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        with contextlib.suppress(RedisError, OSError):
            await self.persistence.node_gone(self.node_id)

    async def peers_alive(self) -> list[str]:
        """Other nodes that count as alive now (fresh from Redis)."""
        now = time.time()
        return [n for n, until in (await self.persistence.nodes()).items()
                if n != self.node_id and until > now]

    # --- renewal ---------------------------------------------------------------------------

    async def renew_once(self) -> None:
        lost = await self.persistence.renew_leases(self.node_id, self.settings.lease_ttl,
                                                   self.lobby.online_players())
        for table in lost:
            self.persistence.fenced_out(table)

    async def _renew_loop(self) -> None:
        await every(self.settings.lease_renew, self.renew_once, "ownership: renewing leases",
                    log)

    # --- takeover ----------------------------------------------------------------------------

    async def _scan_loop(self) -> None:
        interval = self.settings.takeover_scan
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._scan_now.wait(), interval)
            self._scan_now.clear()
            try:
                await self.scan_once()
            except (RedisError, OSError) as exc:
                log.warning("ownership: takeover scan failed: %s", exc)
            except Exception:
                log.exception("ownership: takeover scan failed")

    async def scan_once(self) -> list[str]:
        """Look at the node set and the expired leases once; claim what is free. Returns
        the tables this node claimed."""
        if self.lobby.closing:
            return []  # a draining node hands its tables over: it never claims them back
        await self._check_nodes()
        self.lobby.sweep_forwarded()
        claimed: list[str] = []
        # A node that held many tables: pass after pass until the expired ones are taken
        # (each claim another node won costs one round trip), bounded per scan.
        for _ in range(SCAN_PASSES):
            expired = await self.persistence.expired_leases(SCAN_LIMIT)
            tried = 0
            for table_id in expired:
                if self.lobby.closing:
                    return claimed
                if table_id in self.lobby.tables or table_id in self._claiming:
                    continue  # this node's own (its renewal is late) or being claimed here
                tried += 1
                if await self.take_over(table_id):
                    claimed.append(table_id)
            if len(expired) < SCAN_LIMIT or not tried:
                break
        return claimed

    async def _check_nodes(self) -> None:
        nodes = await self.persistence.nodes()
        now = time.time()
        lobby = self.lobby
        lobby.peers = {n: until for n, until in nodes.items() if n != self.node_id}
        for node, until in lobby.peers.items():
            if until > now:
                lobby.node_back(node)
            elif node not in lobby.dead_nodes:
                await lobby.node_died(node)
        stale = [n for n, until in nodes.items() if until < now - DEAD_NODE_KEEP]
        await self.persistence.forget_nodes(stale)

    async def take_over(self, table_id: str) -> bool:
        """Claim ``table_id`` if its lease expired, rebuild it here (or clean it up).
        False when another node won the claim, or there is nothing to claim."""
        self._claiming.add(table_id)
        try:
            epoch, previous = await self.persistence.claim(table_id, self.node_id, new=False)
            if not epoch:
                lease = await self.persistence.lease(table_id)
                if lease is None or lease.done:
                    await self.persistence.unindex([table_id])
                return False
            self.persistence.adopt(table_id, epoch)
            if self.lobby.closing:  # the drain began during the claim: hand it on at once
                await self.persistence.release(table_id, done=False)
                self.persistence.disown(table_id)
                self.lobby.bus.broadcast({"op": "released", "node": self.node_id})
                return False
            log.info("table %s claimed from node %s (epoch %d)", table_id, previous or "?",
                     epoch)
            try:
                snapshot = await self.persistence.snapshot(table_id)
                events = await self.persistence.events_since(table_id, 0)
                await self.lobby.restore_table(table_id, snapshot, events)
            except BaseException:
                # Not renewed here: its lease runs out again and a node tries once more.
                if table_id not in self.lobby.tables:
                    self.persistence.disown(table_id)
                raise
            return True
        finally:
            self._claiming.discard(table_id)

"""Fenced table ownership on one node: the node's heartbeat, the takeover scan, node deaths.

One liveness per node, fencing per table. A node says it is alive with one heartbeat every
``lease_renew`` seconds, whatever its table count (``node_heartbeat.lua``: the node set
``{nodes}:alive``, node -> Redis time until which it counts as alive, ``lease_ttl`` ahead); a
node whose time is past is dead. Each table has an owner record (``{t:T}:lease``: node,
epoch, ``free`` once handed over, ``done`` once finished) with no expiry: nothing renews it,
so an idle table costs no Redis command. The node that makes a table claims its record
(epoch 1) and enters it in its table set (``{leases}:node:N``, written at claim and end only:
a hint, the record is the truth). Every write of the table is fenced by the epoch
(``fenced_append.lua``, ``fenced_result.lua``; the lobby listing reads the record first).

:class:`Ownership` then, on the node's tick (``server/tick.py``) and its pulse thread
(``server/cluster/pulse.py``: the heartbeat and the Redis probe run there, off the event loop,
so a busy loop is not a dead node; a loop stuck for ``loop_stuck_limit`` lets the heartbeat
end then),

* beats the heart each ``lease_renew``. A heartbeat that finds the node's time had run out
  (paused past it, cut off from Redis) reads the record of each table it owns once and lets
  go of those another node claimed meanwhile (their writes would be refused anyway); having
  read the node set afresh, it attaches its sockets' seated players to their tables again,
  wherever they are served now (its peers took them off their seats); and the node claims
  nothing of others for one ``lease_renew`` (its peers, cut off like it, beat again first:
  no node takes the tables of a peer that was only as late as itself); nor does a node
  whose own last heartbeat is older than ``lease_ttl`` (it is dead for its peers);
* a store outage is not a node death: a peer whose heartbeat ran out (or that left the node
  set) is counted dead, cleaned up after and claimed from only when this node's own view of
  the store was healthy for the last two ``lease_ttl`` (no heartbeat or probe of its own
  failed or waited long for its answer, no takeover scan failed, no write found Redis
  away): a failover of the master holding the node set stops every node's heartbeat alike,
  and each beats again once it is over;
* every ``takeover_scan`` seconds reads the node set (one command; a dead node is cleaned up
  after once by ``Takeover.node_died``, ``takeover.py``), and for each dead node, and each
  peer that said on the bus that it handed tables over, reads its table set and the records
  in it, and claims each table still that node's (a dead node's, its death read again just
  before each claim, or one handed over) with a compare-and-set on the record alone
  (``lease_claim.lua``: the epoch read must still be there; one claimant wins, epoch + 1).
  Entries claimed by another node, finished or gone leave the set; an empty set is not read
  again until the node is seen alive. The winner reads the table's snapshot and event log
  and hands them to ``Takeover.restore_table`` (``takeover.py``), which rebuilds the game
  (``Table.restore``) or cleans up a table with no game to carry on. A node started again
  under the same id claims back at once what its table set still names as its own (its
  previous run's tables, unclaimed).

Whether a node is dead is each peer's judgement from the node set, in another hash slot than
the records, so not atomic with the claim (it is read again just before each claim): a node
that beats again between that read and the claim loses the table all the same. That costs
the table a takeover, never a double owner: the epoch fences every write.

Takeover time. The owner beats at ``t0`` and dies just after; it counts as dead from
``t0 + lease_ttl``; the next scan of some live node comes within ``takeover_scan`` of that,
and the set read, the record reads, the claim and the rebuild take a few round trips. So a
table is taken over at most ``lease_ttl + takeover_scan`` (+ a few ms) after its owner's last
heartbeat, and at least ``lease_ttl - lease_renew`` after its owner's death: 4-7 s with the
defaults (6 s, 2 s, 1 s). A drained table (SIGTERM) is claimed by the first peer that hears
of it: milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Protocol

from redis.exceptions import RedisError

from server.cluster.liveness import NodeLiveness
from server.cluster.pulse import NodePulse, PulseNews
from server.config import Settings
from server.lobby.ports import Clock, NodeSender
from server.lobby.registry import TableRegistry
from server.lobby.requests import ForwardedRequests
from server.lobby.table import Table
from server.protocol.node_messages import Released
from server.store.persistence import Lease, Persistence
from server.tick import Tick

log = logging.getLogger(__name__)

READ_CHUNK = 256
"""Owner records read in one pipeline by the scan (a dead node's set is read in such chunks)."""
DEAD_NODE_KEEP = 3600.0
"""Seconds a dead node stays in the node set at least (so every peer sees it dead once); it
stays longer while its table set still names tables."""
STEADY_LEASES = 2
"""A node counts a peer dead only when its own view of the store was healthy for this many
``lease_ttl``: a peer cut off by the same outage or failover gets a whole lease of its own to
beat again after this node found the store back."""
HEARTBEAT = "heartbeat"
SCAN = "takeover-scan"
"""The names of the ownership duties on the node's tick."""


class TableTakeover(Protocol):
    """What the ownership loops hand over to the lobby's takeover
    (:class:`~server.lobby.takeover.Takeover`)."""

    async def restore_table(self, table_id: str, snapshot: dict[str, Any] | None,
                            events: list[dict[str, Any]]) -> Table | None: ...

    async def node_died(self, node: str, *, stopped: bool = False) -> None: ...

    async def reattach(self) -> None: ...

    async def wind_up_at_stop(self) -> None: ...


class Ownership:
    """The ownership duties of one node. Needs the node's settings and persistence, the
    tables here (``registry``), the lobby's takeover, the node's view of its peers, its bus,
    clock and forwarded requests, and how many players are online here."""

    def __init__(self, settings: Settings, persistence: Persistence, registry: TableRegistry,
                 takeover: TableTakeover, *, peers: NodeLiveness, bus: NodeSender,
                 clock: Clock, requests: ForwardedRequests, online_players: Callable[[], int],
                 tick: Tick | None = None, pulse: NodePulse | None = None) -> None:
        """``tick``: the node's tick, which runs the scan (one of its own if not given);
        ``pulse``: the node's pulse thread, which beats the heart and probes Redis off the
        loop (``server/cluster/pulse.py``; without one, the tick beats the heart)."""
        self.pulse = pulse
        self._late_task: asyncio.Task[None] | None = None
        self.settings = settings
        self.tick = tick if tick is not None else Tick()
        self.node_id = settings.node_id
        self.persistence = persistence
        self.registry = registry
        self.takeover = takeover
        self.peers = peers
        self.bus = bus
        self.clock = clock
        self.requests = requests
        self.online_players = online_players
        self._claiming: set[str] = set()
        self._handed: set[str] = set()  # peers that said they handed tables over
        self._emptied: set[str] = set()  # dead nodes whose table set was found empty
        self._own_checked = False
        self._started = False
        self._claim_after = 0.0  # monotonic time before which this node claims nothing
        self._beat_at = -float("inf")  # monotonic time of this node's last heartbeat
        self._beat_failed_at = -float("inf")  # ... and of its last one that failed
        self._scan_failed_at = -float("inf")  # monotonic time a takeover scan last failed
        self._unsteady_logged = False

    async def start(self) -> None:
        """Say this node is alive (once, at once), then beat every ``lease_renew`` and scan
        every ``takeover_scan`` (on the tick)."""
        await self.persistence.node_started(self.node_id)
        await self.beat_once()
        self._claim_after = 0.0  # a restart under the same id is not a pause
        self._started = True
        pulse = self.pulse
        if pulse is not None:
            pulse.online_count = self.online_players
            pulse.online = self.online_players()
            pulse.beat_at = self._beat_at
            self.persistence.probe = pulse
            pulse.start(self._news)
            self.tick.on_halt(pulse.halt)
        else:
            self.tick.add(HEARTBEAT, self.settings.lease_renew, self.beat_once, logger=log,
                          what="ownership: heartbeat")
        self.tick.add(SCAN, self.settings.takeover_scan, self.scan_once, logger=log,
                      what="ownership: takeover scan",
                      first=0 if self._handed else None)  # a peer handed tables over already

    async def stop(self) -> None:
        """Stop beating and scanning; the tables with no game left to carry on are done
        (``Takeover.wind_up_at_stop``), and the node leaves the node set, or, with tables
        left for a peer, counts as dead and stopped from now on (a peer takes them over
        without counting the node as lost)."""
        if self.pulse is not None:
            await self.pulse.stop()
        await self.tick.remove(HEARTBEAT, SCAN)
        if self._late_task is not None:
            self._late_task.cancel()
        with contextlib.suppress(RedisError, OSError):
            await self.takeover.wind_up_at_stop()
        with contextlib.suppress(RedisError, OSError):
            await self.persistence.node_gone(self.node_id)

    async def peers_alive(self) -> list[str]:
        """Other nodes that count as alive now (fresh from Redis)."""
        now = self.clock.now()
        return [n for n, until in (await self.persistence.nodes()).items()
                if n != self.node_id and until > now]

    # --- heartbeat ---------------------------------------------------------------------------

    async def beat_once(self) -> None:
        """Beat once; if this node had been dead for its peers, let go of what they took."""
        try:
            late = await self.persistence.heartbeat(self.node_id, self.settings.lease_ttl,
                                                      self.online_players())
        except (RedisError, OSError):
            self._beat_failed_at = time.monotonic()
            raise
        self._beat_at = time.monotonic()
        if late:
            await self._after_late()

    def _news(self, news: PulseNews) -> None:
        """On the loop: what the pulse thread learned (its probe's answer, the clock offset
        to Redis, a heartbeat that found this node's time had run out)."""
        if news.clock_offset is not None:
            self.persistence.clock_offset = news.clock_offset
        self.persistence.probed(news.up, news.found, news.probed_at)
        if news.late and self._late_task is None:
            self._late_task = asyncio.ensure_future(self._after_late())
            self._late_task.add_done_callback(self._late_done)

    def _late_done(self, task: asyncio.Task[None]) -> None:
        self._late_task = None
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("ownership: checking this node's tables after its heartbeat had "
                        "run out failed: %s", exc)

    def _last_beat(self) -> float:
        """Monotonic time of this node's last heartbeat written."""
        return self.pulse.beat_at if self.pulse is not None else self._beat_at

    async def _after_late(self) -> None:
        """This node's heartbeat had run out: let go of what its peers took."""
        self._claim_after = time.monotonic() + self.settings.lease_renew
        if self._started:
            log.warning("ownership: this node's heartbeat had run out (paused or cut off); "
                        "checking its tables")
        # Its view of its peers is as old as its pause: read afresh before letting go (the
        # players of a table it lets go are attached to its new owner, a live peer).
        await self._check_nodes()
        for table in await self.persistence.lost_tables(self.node_id):
            self.persistence.fenced_out(table)
        # Its peers took its players off their seats: attach them again now that it knows
        # who is alive (a peer's ``reattach``, which also comes, may have found it still
        # with its old view of them).
        await self.takeover.reattach()

    # --- takeover ----------------------------------------------------------------------------

    def tables_released(self, node: str) -> None:
        """A peer handed tables over (drain): look at its table set at once."""
        self._handed.add(node)
        self.tick.poke(SCAN)

    async def scan_once(self) -> list[str]:
        """Look at the node set once; claim the tables of dead nodes and the ones handed
        over. Returns the tables this node claimed."""
        if self.registry.closing:
            return []  # a draining node hands its tables over: it never claims them back
        try:
            return await self._scan()
        except (RedisError, OSError):
            self._scan_failed_at = time.monotonic()  # this node's view is not steady
            raise

    async def _scan(self) -> list[str]:
        dead = await self._check_nodes()
        self.requests.sweep()
        claimed: list[str] = []
        if not self._own_checked:
            # Started again under the same id: what the previous run left unclaimed (or a
            # rebuild here failed: tried again).
            claimed += await self._claim_from(self.node_id, own=True)
            self._own_checked = True
        handed, self._handed = self._handed, set()
        now = time.monotonic()
        if now < self._claim_after or now - self._last_beat() >= self.settings.lease_ttl:
            # Just found late itself, or no heartbeat of its own came through for as long as
            # a peer's counts: the others may be as late as this node, not dead.
            self._handed |= handed  # looked at once this node may claim again
            return claimed
        for node in dict.fromkeys([*dead, *handed]):
            if self.registry.closing:
                break
            if node in self._emptied and node not in handed:
                continue
            claimed += await self._claim_from(node)
        return claimed

    def store_steady(self) -> bool:
        """Whether this node's view of the store was healthy for the last
        :data:`STEADY_LEASES` ``lease_ttl``: no heartbeat or probe of its own failed (or
        waited long for its answer), no takeover scan failed, and no write found Redis away.
        Only then is a peer whose heartbeat ran out meanwhile counted dead (it may have been
        cut off from the store as this node was: a failover, an outage; and it finds the
        store again later than this node may: its client learns the new master on its own,
        its heartbeat comes at another moment, the cluster may refuse it for a while
        longer)."""
        pulse_failed = self.pulse.failed_at if self.pulse is not None else -float("inf")
        failed = max(self._beat_failed_at, self._scan_failed_at, pulse_failed,
                     self.persistence.away_at)
        return self.persistence.redis_up and \
            time.monotonic() - failed >= STEADY_LEASES * self.settings.lease_ttl

    def _steady_for_deaths(self) -> bool:
        steady = self.store_steady()
        if not steady and not self._unsteady_logged:
            log.warning("ownership: this node's own view of the store was not healthy "
                        "within the last %gs: no peer is counted dead meanwhile",
                        STEADY_LEASES * self.settings.lease_ttl)
        self._unsteady_logged = not steady
        return steady

    async def _check_nodes(self) -> list[str]:
        """Read the node set: peers seen alive again or dead for the first time are told to
        the lobby (dead only while this node's view of the store is steady). Returns the
        dead peers."""
        nodes = await self.persistence.nodes()
        now = self.clock.now()
        liveness = self.peers
        steady = self._steady_for_deaths()
        # A peer that left the node set stopped cleanly with nothing left for anyone.
        left = [n for n in liveness.peers if n not in nodes]
        if not steady:  # a node set read from a promoted replica may miss a newcomer
            nodes = {**{n: liveness.peers[n] for n in left}, **nodes}
            left = []
        liveness.peers = {n: until for n, until in nodes.items() if n != self.node_id}
        for node in left:
            await self.takeover.node_died(node, stopped=True)
        dead: list[str] = []
        stopped: set[str] | None = None
        for node, until in liveness.peers.items():
            if until > now:
                liveness.back(node)
                self._emptied.discard(node)
            elif steady:
                dead.append(node)
                if node not in liveness.dead_nodes:
                    if stopped is None:
                        stopped = await self.persistence.stopped_nodes()
                    await self.takeover.node_died(node, stopped=node in stopped)
        # Long dead, and nothing of theirs left to claim (a node that stopped last keeps
        # its games for whichever node starts next, however much later).
        stale = [n for n, until in nodes.items()
                 if until < now - DEAD_NODE_KEEP and n in self._emptied]
        await self.persistence.forget_nodes(stale)
        self._emptied.difference_update(stale)
        return dead

    async def _claim_from(self, node: str, *, own: bool = False) -> list[str]:
        """Claim every table of ``node``'s set still recorded as ``node``'s (``own``: this
        node's previous run's, not one it holds now; a dead node's; else only those handed
        over). Entries of tables claimed elsewhere, finished or gone leave the set."""
        tables = await self.persistence.node_tables(node)
        if not tables:
            self._emptied.add(node)
            return []
        random.shuffle(tables)  # live peers start at different places of a dead node's set
        dead = own or node in self.peers.dead_nodes
        claimed: list[str] = []
        for at in range(0, len(tables), READ_CHUNK):
            if self.registry.closing:
                return claimed
            chunk = tables[at:at + READ_CHUNK]
            leases = await self.persistence.leases(chunk)
            stale: list[str] = []
            for table_id in chunk:
                lease = leases[table_id]
                if lease is None:
                    # Gone, or (a live node's set) a claim in flight: the set is written
                    # before the record.
                    if not own:
                        stale.append(table_id)
                elif lease.done or lease.node != node:
                    stale.append(table_id)
                elif (dead or lease.free) and self._claimable(table_id, own=own):
                    if not (own or lease.free) and await self._back(node):
                        await self.persistence.unindex(node, stale)
                        return claimed  # it beat again since the node set was read
                    if await self.take_over(table_id, lease):
                        claimed.append(table_id)
            await self.persistence.unindex(node, stale)
        return claimed

    async def _back(self, node: str) -> bool:
        """Whether ``node``, seen dead, counts as alive again now (read just before each
        claim from it: a node only late loses no table it beats again in time for)."""
        until = await self.persistence.node_until(node)
        return until is not None and until > self.clock.now()

    def _claimable(self, table_id: str, *, own: bool) -> bool:
        if table_id in self.registry.tables or table_id in self._claiming:
            return False
        return not (own and table_id in self.persistence.epochs)

    async def take_over(self, table_id: str, lease: Lease) -> bool:
        """Claim ``table_id`` from the owner record ``lease`` (as read just before), rebuild
        it here (or clean it up). False when another node won the claim, or the record
        changed since it was read."""
        self._claiming.add(table_id)
        try:
            epoch, previous = await self.persistence.claim(table_id, self.node_id, new=False,
                                                           epoch=lease.epoch)
            if not epoch:
                return False
            self.persistence.adopt(table_id, epoch)
            if self.registry.closing:  # the drain began during the claim: hand it on at once
                await self.persistence.release(table_id, done=False)
                self.persistence.disown(table_id)
                self.bus.broadcast(Released(node=self.node_id))
                return False
            log.info("table %s claimed from node %s (epoch %d)", table_id, previous or "?",
                     epoch)
            try:
                snapshot = await self.persistence.snapshot(table_id)
                events = await self.persistence.events_since(table_id, 0)
                await self.takeover.restore_table(table_id, snapshot, events)
            except BaseException:
                # Still this node's by its record (and in its table set): the next scan
                # claims it again (as a node started again under the same id does).
                if table_id not in self.registry.tables:
                    self.persistence.disown(table_id)
                    self._own_checked = False
                raise
            return True
        finally:
            self._claiming.discard(table_id)

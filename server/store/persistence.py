"""What the match server keeps in Redis: table event logs, snapshots, results, owner records
and rating inboxes. This module holds the store's health and the write-behind flush; the
state it flushes, what is buffered per table and the owner epochs that fence it, is one
object of its own (``write_buffer.py``) that the parts share: ``results.py`` (results and
rating inboxes: a finished game's result takes that table's buffered writes with it),
``owners.py`` (owner records and the node set: a release drops what is buffered),
``event_log.py`` (reading logs back), ``lobby_index.py`` (the lobby index) and ``players.py``
(seats, presence). Its methods return plain values.

Write-behind with group commit: the per-move path never waits for Redis.
:meth:`Persistence.append_event` and :meth:`Persistence.mark_dirty` only buffer; when something
is buffered and no flush is in flight, a flush starts at once (the flusher task wakes on the
next turn of the event loop), and whatever is buffered while a flush is in flight goes with
the next one, right after it. So one write carries every event of every table buffered during
the previous round trip: under load many moves share a write, at a human pace a move waits one
round trip. Each Redis command costs the client several microseconds to pack and its reply to
parse, so a flush is one hand-packed batch (:class:`~server.store.batch.Batch`) of one
``EVALSHA`` of ``fenced_append.lua`` per table; the snapshot goes with it at most every
:data:`SNAPSHOT_INTERVAL` seconds per table, except that a snapshot marked urgent (the table's
status changed) goes with the next flush.

Fencing: each table this node owns has an owner epoch (:meth:`adopt`, from the claim of its
owner record ``{t:T}:lease``, see ``ownership.py``); every write of its log, snapshot and
result goes through a script that refuses it when the epoch in Redis is not the writer's.
After a flush each table hears, through :attr:`on_stored`, the highest version now stored
(store before announce), or, through :attr:`on_fenced`, that another node claimed it. A
finished game is different: :meth:`write_result` writes that table's buffered events and
snapshot and the result in one fenced script, awaited, before anyone is told the game
ended; the rating inbox entries (per player: another hash slot) follow in a pipeline of
their own.

Keys (see ``keys.py``): ``{t:T}:events`` (capped list of events: msgpack, the same maps
clients receive), ``{t:T}:snapshot`` (msgpack), ``{t:T}:results`` (JSON), ``{t:T}:lease``,
``{leases}:node:N`` (the tables of node N), ``{nodes}:alive`` (heartbeats), ``{p:P}:seat``,
``{p:P}:presence``, ``{p:P}:inbox`` (JSON), ``lobby:tables``.

The store's identity (``store:id``): a random id written once (SET NX) by the first node on an
empty store and remembered by every node (:meth:`Persistence.claim_store`). The health check
reads it every ``redis_check_interval`` (that read is the check: no separate PING); missing or
different, the store was emptied (FLUSHALL) or replaced (a fresh Redis) under the node:
:attr:`Persistence.on_store_lost` is told, once per loss, and a new id is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol, cast

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, RedisError

from server.config import Settings
from server.metrics import Metrics
from server.store.batch import Batch
from server.store.event_log import LOG_SLACK, EventLogReads
from server.store.keys import Keys
from server.store.lobby_index import LobbyIndex
from server.store.owners import LEASE_FIELDS, Lease, OwnerRecords
from server.store.players import PlayerRecords
from server.store.read_batch import reads
from server.store.replicas import REPLICA_CHECK, Replicas, ReplicaTimeout
from server.store.results import Fenced, ResultRecords, _aw
from server.store.scripts import load_script
from server.store.write_buffer import (
    FENCED_OUT,
    SNAPSHOT_INTERVAL,
    SnapshotFn,
    StoredFn,
    Taken,
    WriteBuffer,
)
from server.tick import Tick

# Re-exported: the names callers import from here.
__all__ = ["FENCED_OUT", "LEASE_FIELDS", "LOG_SLACK", "SNAPSHOT_INTERVAL", "Fenced", "Lease",
           "Persistence", "SnapshotFn", "StoredFn", "_aw"]

log = logging.getLogger(__name__)


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class StoreProbe(Protocol):
    """A probe of Redis off the event loop (the node's pulse thread)."""

    def answered_since(self, when: float) -> bool:
        """Whether a probe started at ``when`` (monotonic) or later answered."""
        ...

    def ask(self) -> None:
        """Tell the loop what the next probe finds, even if it is what it told last (the
        loop decided otherwise meanwhile: a failed write marked Redis away)."""
        ...


class Persistence(ResultRecords, OwnerRecords, EventLogReads, LobbyIndex, PlayerRecords):
    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings,
                 metrics: Metrics | None = None, *,
                 on_stored: Callable[[str, int], None] | None = None,
                 on_fenced: Callable[[str], None] | None = None,
                 on_store_lost: Callable[[], None] | None = None,
                 on_health: Callable[[bool], None] | None = None,
                 gather_writes: Callable[[bool], None] | None = None,
                 tick: Tick | None = None) -> None:
        """``on_stored``, ``on_fenced``, ``on_store_lost``: who is told after a flush that a
        table's events up to a version are stored, that a table's write was refused (its
        lease is lost), and that the store was emptied or replaced (the lobby's takeover);
        ``on_health``: that this node can store again or not (:attr:`redis_up`);
        ``gather_writes(True)``/``(False)``: around telling the tables of one flush that their
        events are stored, so that what they announce leaves in one write per socket; ``tick``:
        the node's tick, which runs the Redis check (one of its own if not given)."""
        self.redis = redis
        self.metrics = metrics if metrics is not None else Metrics(enabled=False)
        # False from a failed Redis check or write until a check answers again: new actions
        # are refused with ``unavailable`` and /readyz, /healthz say so (see redis_up).
        self._redis_up = True
        self.metrics.redis_up.set(1)  # as _redis_up, from the start (the gauge follows it)
        self.on_health = on_health
        self._confirming: asyncio.Future[bool] | None = None
        # The node's pulse thread (server/cluster/pulse.py), when it probes Redis instead of
        # the tick (start(probed=True)): its answers come through probed().
        self.probe: StoreProbe | None = None
        self._claimed_at = 0.0  # monotonic time the store's identity was last read here
        self._away_at = 0.0  # monotonic time Redis was last marked away here
        self._probe_heard = False  # the pulse thread's probe told something yet
        self._reclaiming: asyncio.Task[None] | None = None
        # The store identity this node knows (claim_store), and who is told when it is gone.
        self.store_id: str | None = None
        self.on_store_lost = on_store_lost
        self.tick = tick if tick is not None else Tick()
        self._pages: dict[tuple[str | None, int, int],
                          tuple[float, asyncio.Future[tuple[int, list[bytes]]]]] = {}
        self.keys = keys
        self._settings = settings
        self._later: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()
        self._flush_conn: list[Any] = []  # the flusher's own Redis connection (Batch.execute)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Redis's clock less this node's, seconds (measured by each heartbeat).
        self.clock_offset = 0.0
        self._cluster = isinstance(redis, aioredis.RedisCluster)
        self.on_stored = on_stored
        self.on_fenced = on_fenced
        self.on_gap: Callable[[str, int, int], list[bytes] | None] | None = None
        """Asked for a table's events after a version and before another (msgpack, as
        logged) when the store lost them (:meth:`_gap`); None: not in memory (the table
        ends). Set by the lobby's takeover."""
        self.gather_writes = gather_writes
        self._release_seat = redis.register_script(load_script("release_seat.lua"))
        self._inbox_remove = redis.register_script(load_script("inbox_remove.lua"))
        self._inbox_add = redis.register_script(load_script("inbox_add.lua"))
        self._lobby_list = redis.register_script(load_script("lobby_list.lua"))
        self._lobby_page = redis.register_script(load_script("lobby_page.lua"))
        self._lease_claim = redis.register_script(load_script("lease_claim.lua"))
        self._node_heartbeat = redis.register_script(load_script("node_heartbeat.lua"))
        self._lease_release = redis.register_script(load_script("lease_release.lua"))
        self._fenced_append = redis.register_script(load_script("fenced_append.lua"))
        self._fenced_result = redis.register_script(load_script("fenced_result.lua"))
        self._fenced_rewrite = redis.register_script(load_script("fenced_rewrite.lua"))
        # What is buffered for each table until a flush writes it, and the owner epochs.
        self.buffer = WriteBuffer(keys, append_sha=self._fenced_append.sha.encode(),
                                  log_ttl_ms=int(settings.event_log_ttl * 1000),
                                  log_max=settings.event_log_max)
        self._seat_ttl_ms = int(max(settings.event_log_ttl, 3600.0) * 1000)
        # WAIT before announcing where the masters have replicas (replicas.py).
        self.replicas = Replicas(redis, wait=settings.replica_wait,
                                 timeout=settings.replica_wait_timeout)

    # --- the store's health ---------------------------------------------------------------

    @property
    def redis_up(self) -> bool:
        """Whether this node can store: False from a failed check or write until a check
        answers again. Every change is told to :attr:`on_health` (the lobby holds or resumes
        its tables): the one place the node's store health is decided."""
        return self._redis_up

    @redis_up.setter
    def redis_up(self, up: bool) -> None:
        if up == self._redis_up:
            return
        self._redis_up = up
        self.metrics.redis_up.set(1 if up else 0)
        if not up:
            self._away_at = time.monotonic()
            if self.probe is not None:
                # The pulse tells only what changed: a failed write is news to it, and the
                # probe after it says when Redis answers again.
                self.probe.ask()
        if self.on_health is not None:
            try:
                self.on_health(up)
            except Exception:
                log.exception("telling the tables that Redis is %s failed",
                              "back" if up else "away")

    @property
    def away_at(self) -> float:
        """Monotonic time Redis was last marked away here (a failed check or write)."""
        return self._away_at

    async def confirm_up(self) -> bool:
        """Whether the store answers now: one read of its identity (:meth:`check_store`),
        shared by every caller while it is in flight. A failure marks Redis away
        (:attr:`redis_up`). Asked before a player is charged for a deadline that passed."""
        if not self._redis_up:
            return False
        pending = self._confirming
        if pending is None:
            pending = self._confirming = asyncio.ensure_future(self._confirm())
        return await asyncio.shield(pending)

    async def _confirm(self) -> bool:
        started = time.monotonic()
        try:
            up, lost = await self.check_store(
                timeout=max(self._settings.redis_check_interval, 2.0))
        finally:
            self._confirming = None
        if not up and self.probe is not None and self.probe.answered_since(started):
            # The loop read its answer too late, while the pulse thread's own probe, sent
            # since, answered: a busy node, not a Redis outage.
            return True
        if not up:
            if self._redis_up:
                log.warning("Redis is unreachable")
            self.redis_up = False
        return up and not lost

    # --- write-behind ------------------------------------------------------------------

    @property
    def epochs(self) -> dict[str, int]:
        """Owner epoch of each table this node owns (FENCED_OUT once a write was refused)."""
        return self.buffer.epochs

    def append_event(self, table: str, version: int | bytes, packed: bytes | None = None,
                     stored: StoredFn | None = None) -> None:
        """Buffer one event (already msgpack-encoded) of version ``version`` for the table's
        log; a flush starts at once unless one is in flight. Never blocks.

        Once a write holding it (and every earlier event of the table) has succeeded,
        ``stored(version)`` is called (the table announces it then); without ``stored``,
        :attr:`on_stored` is told instead. A table's own callback is kept because its lobby
        may forget a closed table before that table's last event is stored.
        ``append_event(table, packed)`` (no version) is the older form: the event is stored
        the same way, but nobody is told."""
        if packed is None:
            assert isinstance(version, bytes)
            if self.buffer.append(table, None, version, None):
                self._wake.set()
            return
        assert isinstance(version, int)
        if self.buffer.append(table, version, packed, stored):
            self._wake.set()

    def mark_dirty(self, table: str, snapshot: SnapshotFn, *, urgent: bool = False) -> None:
        """Ask for the table's snapshot to be written (computed when it is written): with the
        next flush when ``urgent`` or when the table has none from the last
        :data:`SNAPSHOT_INTERVAL` seconds, else once that interval has passed."""
        self.buffer.mark_dirty(table, snapshot, urgent=urgent)
        if urgent:
            self._wake.set()

    @property
    def pending_events(self) -> int:
        return self.buffer.pending_events

    # --- ownership epochs ----------------------------------------------------------------

    def adopt(self, table: str, epoch: int) -> None:
        """From now on this node writes ``table`` under owner ``epoch`` (its lease claim's)."""
        self.buffer.adopt(table, epoch)

    def disown(self, table: str) -> int | None:
        """Stop writing ``table`` as its owner; its epoch (None: it had none)."""
        return self.buffer.disown(table)

    def fenced_out(self, table: str) -> None:
        """A write of ``table`` was refused, or its owner record names another owner (another
        node claimed it): nothing of it is written any more, and :attr:`on_fenced` is told."""
        if not self.buffer.fence(table):
            return
        log.warning("table %s: owner lease lost (a newer owner claimed it); letting go", table)
        self.metrics.error("fenced")
        if self.on_fenced is not None:
            try:
                self.on_fenced(table)
            except Exception:
                log.exception("table %s: letting go after the lease was lost failed", table)

    async def flush(self, *, everything: bool = False) -> None:
        """Write what is buffered now (one round trip); with ``everything``, also the
        snapshots that are not due yet."""
        async with self._lock:
            await self._flush_locked(everything=everything)

    def _wake_later(self) -> None:
        self._later = None
        self._wake.set()

    async def _flush_locked(self, *, everything: bool = False) -> None:
        buffer = self.buffer
        if not buffer.events and not buffer.dirty:
            return
        batch = Batch(self._flush_conn, cluster=self._cluster)
        taken = buffer.queue(batch, asyncio.get_running_loop().time(), everything=everything)
        if taken.waiting and self._later is None:
            self._later = asyncio.get_running_loop().call_later(
                SNAPSHOT_INTERVAL, self._wake_later
            )
        if not batch.count:
            return
        started = time.perf_counter()
        try:
            await self.replicas.fresh()
            masters = batch.wait_for(self.replicas)
            replies = await batch.execute(self.redis)
            if masters:
                self.replicas.waits += len(masters)
                acks = replies[len(replies) - len(masters):]
                replies = replies[:len(replies) - len(masters)]
                self._acked(taken.order, replies, list(zip(masters, acks, strict=True)))
        except NoScriptError:
            buffer.put_back_taken(taken)
            await self.load_scripts()
            raise
        except BaseException as exc:
            buffer.put_back_taken(taken)
            if not isinstance(exc, asyncio.CancelledError):
                self.redis_up = False
            raise
        self.metrics.redis_rtt.observe(time.perf_counter() - started)
        versions = taken.versions
        # The events of every table in this write are announced together (one table alone
        # gathers its own announcement).
        gather = self.gather_writes if len(taken.order) > 1 else None
        if gather is not None:
            gather(True)
        try:
            for table, reply in zip(taken.order, replies, strict=True):
                if reply == -1:
                    self.fenced_out(table)
                elif reply <= -2:
                    self._gap(table, -2 - reply, taken)
                else:
                    version = versions.get(table)
                    if version is not None:
                        self._tell_stored(table, version)
        finally:
            if gather is not None:
                gather(False)

    def _gap(self, table: str, stored: int, taken: Taken | None) -> None:
        """The store holds ``table``'s log only up to ``stored``, short of the events just
        written (a replica promoted before it had them): nothing of the write was stored.
        The write goes back to the buffer, behind the missing events, which the table gives
        again from memory (:attr:`on_gap`); a table that no longer holds them is ended by
        it, and what it buffered is dropped. Written by the next flush."""
        if taken is not None:
            self.buffer.put_back(*taken.of(table))
        first = self.buffer.firsts.get(table)
        if first is None or first <= stored + 1:
            return
        missing = None if self.on_gap is None else self.on_gap(table, stored, first)
        log.warning("table %s: the store lost versions %d-%d of its log (a failover); %s",
                    table, stored + 1, first - 1,
                    "written again from memory" if missing is not None else "not in memory")
        if missing is None:
            self.buffer.drop(table)
            return
        self.buffer.prepend(table, stored + 1, missing)
        self._wake.set()

    async def rewrite_log(self, table: str, version: int, events: list[bytes]) -> None:
        """Make ``table``'s log exactly ``events`` (msgpack, versions up to ``version``),
        under this node's epoch (``fenced_rewrite.lua``): a log taken over with a gap goes
        on from the events before it. Raises :class:`Fenced` when another node owns it."""
        keys = self.keys
        reply = await self._fenced_rewrite(
            keys=[keys.table_lease(table), keys.table_events(table)],
            args=[self.buffer.epoch_arg(table), self.buffer.log_ttl_ms, version, *events])
        if int(reply) == -1:
            self.fenced_out(table)
            raise Fenced(table)

    def _acked(self, order: list[str], replies: list[Any],
               acks: list[tuple[str, Any]]) -> None:
        """Raise :class:`ReplicaTimeout` when a master's replicas did not all acknowledge the
        batch: nothing of it is announced, and it is written again (what is stored already
        is skipped) once they do. A table fenced meanwhile is let go first."""
        try:
            self.replicas.check(acks)
        except ReplicaTimeout as exc:
            for table, reply in zip(order, replies, strict=True):
                if reply == -1:
                    self.fenced_out(table)
            log.warning("write-behind flush not replicated in time (held): %s", exc)
            raise

    def _tell_stored(self, table: str, version: int) -> None:
        """Tell ``table`` (its own callback, else :attr:`on_stored`) that its events up to
        ``version`` are stored."""
        callback = self.buffer.callbacks.get(table)
        try:
            if callback is not None:
                callback(version)
            elif self.on_stored is not None:
                self.on_stored(table, version)
        except Exception:
            log.exception("table %s: announcing stored events failed", table)

    async def run_flusher(self) -> None:
        """Flush whenever something is buffered, until cancelled: at once when no flush is in
        flight, else right after it (group commit)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
            except NoScriptError:
                self._wake.set()  # the script is loaded again: retried at once
            except (RedisError, OSError) as exc:
                # Everything the batch held is back in the buffer: tried again, in order,
                # once Redis answers (the retry waits for the health check).
                log.warning("write-behind flush failed (kept, retrying): %s", exc)
                self._wake.set()
                await asyncio.sleep(self._settings.redis_check_interval)
            except Exception:
                # Not Redis: logged, and the flusher goes on (a dead flusher would leave
                # every later event of every table of this node unwritten).
                log.exception("write-behind flush failed")
                self._wake.set()
                await asyncio.sleep(self._settings.redis_check_interval)

    async def claim_store(self) -> str:
        """Write the store's identity if it has none (the first node on an empty store) and
        remember the one stored. Two commands, at a node's start and after a loss."""
        key = self.keys.store_id
        await self.redis.set(key, secrets.token_hex(16), nx=True)
        found = await self.redis.get(key)
        self.store_id = None if found is None else _text(found)
        self._claimed_at = time.monotonic()
        return self.store_id or ""

    async def check_store(self, timeout: float = 2.0, *,
                          alone: bool = False) -> tuple[bool, bool]:
        """(Redis answered, the store was lost): one GET of the store's identity (with the
        other reads of the tick's duties due now, one round trip; ``alone``: on a
        connection of its own). Lost means answered with no identity or another one than
        this node knows (emptied, replaced). Not lost when this node never knew one
        (:meth:`claim_store` not done)."""
        key = self.keys.store_id
        try:
            async with asyncio.timeout(timeout):  # no task of its own, as wait_for makes
                found = await (self.redis.get(key) if alone else reads(self.redis).get(key))
        except (RedisError, OSError, TimeoutError) as exc:
            log.info("Redis check failed: %r", exc)
            return False, False
        if self.store_id is None:
            return True, False
        return True, found is None or _text(found) != self.store_id

    def store_lost(self) -> None:
        """The store forgot everything this node wrote: drop every buffered write (its tables
        are gone from the store), forget the owner epochs, and tell :attr:`on_store_lost`.
        The caller claims the store again (:meth:`claim_store`)."""
        log.error("the store was emptied or replaced (its identity %s is gone): every table "
                  "and token it held is lost", self.store_id)
        self.store_id = None
        self.buffer.clear()
        self.metrics.error("store_lost")
        if self.on_store_lost is not None:
            try:
                self.on_store_lost()
            except Exception:
                log.exception("ending what the lost store held failed")

    async def check_once(self) -> None:
        """Check Redis once (:meth:`check_store`; the tick does it every
        ``redis_check_interval``): :attr:`redis_up`, the metrics, and a lost store (told once;
        the identity is written again)."""
        interval = self._settings.redis_check_interval
        started = time.perf_counter()
        # A generous timeout: a node under load answers late, not never (an unreachable
        # Redis refuses the connection at once).
        up, lost = await self.check_store(timeout=max(interval, 2.0))
        if not up and self._redis_up:
            # Before every table holds and every move is refused: asked once more, alone
            # (a read that failed with the batch it went in, or a loop too busy to read the
            # answer in time, is not an outage; a Redis that is away refuses this too).
            up, lost = await self.check_store(timeout=max(interval, 2.0), alone=True)
        await self._checked(up, lost, started)

    def probed(self, up: bool, found: str | None, probed_at: float) -> None:
        """The pulse thread's probe (``server/cluster/pulse.py``) read the store's identity
        ``found`` (``up``: it answered) in a probe started at ``probed_at`` (monotonic): the
        same decisions as :meth:`check_once`, without a command on the loop. A probe that
        answers is health, however late the loop reads it. A probe started before this
        node last read the identity is no news of a loss (the identity it read may be the
        one this node replaced)."""
        self._probe_heard = True
        if up and not self._redis_up and probed_at < self._away_at:
            # Started before the failure that marked Redis away: no news of its return.
            if self.probe is not None:
                self.probe.ask()
            return
        lost = (up and self.store_id is not None and probed_at >= self._claimed_at
                and found != self.store_id)
        if lost or (up and self.store_id is None):
            if self._reclaiming is None:
                self._reclaiming = asyncio.ensure_future(self._checked(up, lost, None))
                self._reclaiming.add_done_callback(self._reclaimed)
            return
        self._set_health(up)

    def _reclaimed(self, task: asyncio.Task[None]) -> None:
        self._reclaiming = None
        if not task.cancelled() and task.exception() is not None:
            log.warning("Redis check failed: %s", task.exception())

    async def answers(self, timeout: float = 1.0) -> bool:
        """Whether Redis answers (``/healthz``): the pulse thread's probe when the node has
        one (a busy loop is not a Redis outage): one started within two check periods and
        a probe's timeout (a probe in flight may take that long) answered; else a PING on
        the loop."""
        if self.probe is not None and self._probe_heard:
            window = 2 * self._settings.redis_check_interval + max(
                self._settings.redis_check_interval, 2.0)
            return self.probe.answered_since(time.monotonic() - window)
        # No probe yet (the node has just started): asked here.
        return await self.ping(timeout=timeout)

    async def _checked(self, up: bool, lost: bool, started: float | None) -> None:
        """What a check found: a lost store, its identity written again, the health."""
        if lost:
            self.store_lost()
        if up and self.store_id is None:
            # SET NX: of several nodes noticing the same loss, one id is written. A fresh
            # Redis has none of the scripts sent by hash either.
            with contextlib.suppress(RedisError, OSError):
                await self.claim_store()
                await self.load_scripts()
        if up and started is not None:
            self.metrics.redis_rtt.observe(time.perf_counter() - started)
        self._set_health(up)

    def _set_health(self, up: bool) -> None:
        if up != self.redis_up:
            log.warning("Redis is %s", "back" if up else "unreachable")
        self.redis_up = up
        self.metrics.redis_up.set(1 if up else 0)

    async def load_scripts(self) -> None:
        """Load the script sent by hash in hand-packed batches (``EVALSHA``): the fenced
        append of the flush (on a cluster, on every master)."""
        await self.redis.script_load(self._fenced_append.script)

    def start(self, *, probed: bool = False) -> None:
        """Start the flusher, and the Redis check on the tick unless ``probed``: the node's
        pulse thread probes Redis and tells :meth:`probed` (and sets :attr:`probe`)."""
        self._task = asyncio.create_task(self.run_flusher(), name="write-behind")
        if not probed:
            self.tick.add("redis-check", self._settings.redis_check_interval, self.check_once,
                          first=0, logger=log, what="Redis check")
        if self.replicas.want:  # counted on the tick too: a quiet node's counts stay fresh
            self.tick.add("replica-count", REPLICA_CHECK, self.replicas.fresh, first=0,
                          logger=log, what="counting the replicas")

    async def stop(self) -> None:
        """Stop the flusher and write what is left (nothing buffered is lost on shutdown)."""
        await self.tick.remove("redis-check", "replica-count")
        if self._reclaiming is not None:
            self._reclaiming.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._later is not None:
            self._later.cancel()
            self._later = None
        try:
            await self.flush(everything=True)
        except NoScriptError:  # a fresh Redis: the script is loaded again, once more
            await self.flush(everything=True)
        if self._flush_conn:
            await cast(Any, self.redis.connection_pool).release(self._flush_conn.pop())

    # --- finished games ------------------------------------------------------------------

    async def ping(self, timeout: float = 2.0) -> bool:
        try:
            async with asyncio.timeout(timeout):
                return bool(await self.redis.ping())
        except (RedisError, OSError, TimeoutError):
            return False

"""What the match server keeps in Redis: table event logs, snapshots, results, owner records
and rating inboxes; with its parts ``lobby_index.py`` (the lobby index) and ``players.py``
(seats, presence), which need none of its state. Its methods return plain values. What stays
here shares one state: the write-behind buffer, the owner epochs that fence every write of
it (a claim, a release and a finished game's result all read or clear that buffer), and the
store's identity that a refused write checks; split further, each part would reach into
another's.

Write-behind with group commit: the per-move path never waits for Redis.
:meth:`Persistence.append_event` and :meth:`Persistence.mark_dirty` only buffer; when something
is buffered and no flush is in flight, a flush starts at once (the flusher task wakes on the
next turn of the event loop), and whatever is buffered while a flush is in flight goes with
the next one, right after it. So one write carries every event of every table buffered during
the previous round trip: under load many moves share a write, at a human pace a move waits one
round trip. Each Redis command costs the client several microseconds to pack and its reply to
parse, so a flush is one hand-packed batch (:class:`_Batch`) of one ``EVALSHA`` of
``fenced_append.lua`` per table; the snapshot goes with it at most every
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
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import msgpack
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, RedisError

from server.config import Settings
from server.metrics import Metrics
from server.store.keys import Keys
from server.store.lobby_index import LobbyIndex
from server.store.players import PlayerRecords
from server.store.read_batch import reads
from server.store.scripts import load_script
from server.tick import Tick

log = logging.getLogger(__name__)

SnapshotFn = Callable[[], dict[str, Any]]
StoredFn = Callable[[int], None]
SNAPSHOT_INTERVAL = 60.0
"""Seconds between two snapshot writes of one table. Its event log is written every flush and
holds every change; the snapshot is what other nodes read for a table's status, and a new
status is written at once (urgent), so the periodic write only refreshes the state it shows
(at 5 s it came on nearly every other move at human pace)."""
LOG_SLACK = 16
"""Entries read beyond a page's range at each side of the log (repeated or newer ones)."""
FENCED_OUT = -1
"""The epoch of a table whose write was refused: every later write of it is refused too."""
T = TypeVar("T")


_packer = msgpack.Packer(use_bin_type=True)


class _Batch:
    """Redis commands written as RESP by hand, sent in one write and answered in order.

    The write-behind flush sends hundreds of small commands at a time; redis-py's pipeline
    costs several microseconds of Python per command to pack and parse, this about a third of
    it. Any failure drops the connection (unread replies must not reach the next user) and
    raises, like a pipeline would.
    """

    __slots__ = ("commands", "count", "keep", "parts")

    def __init__(self, keep: list[Any] | None = None, *, cluster: bool = False) -> None:
        # The arguments as well, only for a cluster (sent through redis-py's pipeline).
        self.commands: list[tuple[bytes, ...]] | None = [] if cluster else None
        self.parts: list[bytes] = []
        self.count = 0
        # With ``keep`` (a list of at most one connection), the connection stays there from
        # one execute to the next instead of going back to the pool (whose check-out and
        # check-in cost about as much as the write): the write-behind flusher's, which
        # executes once per move at a human pace.
        self.keep = keep

    def add(self, *args: bytes) -> None:
        if self.commands is not None:
            self.commands.append(args)
        parts = self.parts
        parts.append(b"*%d\r\n" % len(args))
        for arg in args:
            parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
        self.count += 1

    def add_headed(self, head: tuple[bytes, ...], encoded: bytes, *tail: bytes) -> None:
        """Like ``add(*head, *tail)``, with ``encoded`` the RESP of ``head`` made beforehand."""
        if self.commands is not None:
            self.commands.append(head + tail)
        parts = self.parts
        parts.append(b"*%d\r\n" % (len(head) + len(tail)))
        parts.append(encoded)
        for arg in tail:
            parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
        self.count += 1

    async def execute(self, redis: aioredis.Redis) -> list[Any]:
        if isinstance(redis, aioredis.RedisCluster):
            # A cluster: redis-py's cluster pipeline sends each command to its slot's node
            # (one round trip per node); the replies come back in order.
            assert self.commands is not None, "a batch for a cluster is made with cluster=True"
            async with redis.pipeline(transaction=False) as pipe:
                for command in self.commands:
                    pipe.execute_command(command[0].decode(), *command[1:])
                return list(await pipe.execute())
        pool: Any = redis.connection_pool  # get_connection is not typed in redis-py 5.2
        keep = self.keep
        conn = keep[0] if keep else await pool.get_connection("_")
        try:
            await conn.send_packed_command(self.parts)  # pings first only if long idle
            replies = [await conn.read_response(disable_decoding=True)
                       for _ in range(self.count)]
        except BaseException:
            if keep:
                keep.clear()
            await conn.disconnect(nowait=True)
            await pool.release(conn)
            raise
        if keep is None:
            await pool.release(conn)
        elif not keep:
            keep.append(conn)
        return replies


def _aw(value: Awaitable[T] | T) -> Awaitable[T]:
    """redis-py types its commands as "awaitable or value"; the asyncio client always awaits."""
    return cast(Awaitable[T], value)


def _first_arg(firsts: dict[str, int], table: str) -> bytes:
    first = firsts.get(table)
    return b"" if first is None else b"%d" % first




class Fenced(Exception):
    """A write was refused: another node claimed the table (its owner epoch in Redis is newer
    than this node's). The table must stop: it is not this node's any more."""

    def __init__(self, table: str) -> None:
        super().__init__(f"table {table}: owner lease lost to another node")
        self.table = table


@dataclass(frozen=True, slots=True)
class Lease:
    """A table's owner record as stored: its owner node and epoch; ``free`` once handed over
    (any live node may claim it), ``done`` once the table finished (never claimed again)."""

    node: str
    epoch: int
    done: bool
    free: bool = False


LEASE_FIELDS = ["node", "epoch", "done", "free"]


def _lease(row: list[Any]) -> Lease | None:
    node, epoch, done, free = row
    if epoch is None:
        return None
    return Lease(_text(node or b""), int(epoch), _text(done or b"") == "1",
                 _text(free or b"") == "1")


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class Persistence(LobbyIndex, PlayerRecords):
    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings,
                 metrics: Metrics | None = None, *,
                 on_stored: Callable[[str, int], None] | None = None,
                 on_fenced: Callable[[str], None] | None = None,
                 on_store_lost: Callable[[], None] | None = None,
                 on_health: Callable[[bool], None] | None = None,
                 tick: Tick | None = None) -> None:
        """``on_stored``, ``on_fenced``, ``on_store_lost``: who is told after a flush that a
        table's events up to a version are stored, that a table's write was refused (its
        lease is lost), and that the store was emptied or replaced (the lobby's takeover);
        ``on_health``: that this node can store again or not (:attr:`redis_up`); ``tick``:
        the node's tick, which runs the Redis check (one of its own if not given)."""
        self.redis = redis
        self.metrics = metrics if metrics is not None else Metrics(enabled=False)
        # False from a failed Redis check or write until a check answers again: new actions
        # are refused with ``unavailable`` and /readyz, /healthz say so (see redis_up).
        self._redis_up = True
        self.on_health = on_health
        self._confirming: asyncio.Future[bool] | None = None
        # The store identity this node knows (claim_store), and who is told when it is gone.
        self.store_id: str | None = None
        self.on_store_lost = on_store_lost
        self.tick = tick if tick is not None else Tick()
        self._pages: dict[tuple[str | None, int, int],
                          tuple[float, asyncio.Future[tuple[int, list[bytes]]]]] = {}
        self.keys = keys
        self._settings = settings
        self._events: dict[str, list[bytes]] = {}
        self._versions: dict[str, int] = {}  # table -> version of its last buffered event
        self._firsts: dict[str, int] = {}  # table -> version of its first buffered event
        self._callbacks: dict[str, StoredFn] = {}  # table -> its own "stored" callback
        self._dirty: dict[str, SnapshotFn] = {}
        self._urgent: set[str] = set()
        self._snapshot_at: dict[str, float] = {}  # loop time of each table's last snapshot
        # No dirty table's periodic snapshot is due before this loop time: until then a
        # flush looks at the urgent tables only, not at every dirty one (per move at a
        # human pace, that look grew with the tables).
        self._due_at = 0.0
        self._pruned_at = 0.0
        self._later: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()
        self._flush_conn: list[Any] = []  # the flusher's own Redis connection (_Batch.execute)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Owner epoch of each table this node owns (FENCED_OUT once a write was refused).
        self.epochs: dict[str, int] = {}
        # Redis's clock less this node's, seconds (measured by each heartbeat).
        self.clock_offset = 0.0
        self._cluster = isinstance(redis, aioredis.RedisCluster)
        # Per table, the fixed arguments of its fenced append and their RESP encoding, made
        # once per epoch (dropped whenever the epoch changes or the table is given up).
        self._heads: dict[str, tuple[tuple[bytes, ...], bytes]] = {}
        self.on_stored = on_stored
        self.on_fenced = on_fenced
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
        self._append_sha = self._fenced_append.sha.encode()
        self._log_ttl_ms = int(settings.event_log_ttl * 1000)
        self._seat_ttl_ms = int(max(settings.event_log_ttl, 3600.0) * 1000)

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
        if self.on_health is not None:
            try:
                self.on_health(up)
            except Exception:
                log.exception("telling the tables that Redis is %s failed",
                              "back" if up else "away")

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
        try:
            up, lost = await self.check_store(
                timeout=max(self._settings.redis_check_interval, 2.0))
        finally:
            self._confirming = None
        if not up:
            if self._redis_up:
                log.warning("Redis is unreachable")
            self.redis_up = False
        return up and not lost

    # --- write-behind ------------------------------------------------------------------

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
            packed = version
        else:
            assert isinstance(version, int)
            self._versions[table] = version
            if stored is not None:
                self._callbacks[table] = stored
        pending = self._events.get(table)
        if pending is None:
            if isinstance(version, int):
                self._firsts[table] = version
            self._events[table] = [packed]
            self._wake.set()
        else:
            pending.append(packed)

    def mark_dirty(self, table: str, snapshot: SnapshotFn, *, urgent: bool = False) -> None:
        """Ask for the table's snapshot to be written (computed when it is written): with the
        next flush when ``urgent`` or when the table has none from the last
        :data:`SNAPSHOT_INTERVAL` seconds, else once that interval has passed."""
        dirty = self._dirty
        if table not in dirty:
            at = self._snapshot_at.get(table)
            due = 0.0 if at is None else at + SNAPSHOT_INTERVAL
            if due < self._due_at:
                self._due_at = due
        dirty[table] = snapshot
        if urgent:
            self._urgent.add(table)
            self._wake.set()

    @property
    def pending_events(self) -> int:
        return sum(len(v) for v in self._events.values())

    # --- ownership epochs ----------------------------------------------------------------

    def adopt(self, table: str, epoch: int) -> None:
        """From now on this node writes ``table`` under owner ``epoch`` (its lease claim's)."""
        self.epochs[table] = epoch
        self._heads.pop(table, None)

    def disown(self, table: str) -> int | None:
        """Stop writing ``table`` as its owner; its epoch (None: it had none)."""
        self._callbacks.pop(table, None)
        self._heads.pop(table, None)
        return self.epochs.pop(table, None)

    def _epoch_arg(self, table: str) -> bytes:
        epoch = self.epochs.get(table)
        return b"" if epoch is None else b"%d" % epoch

    def fenced_out(self, table: str) -> None:
        """A write of ``table`` was refused, or its owner record names another owner (another
        node claimed it): nothing of it is written any more, and :attr:`on_fenced` is told."""
        if self.epochs.get(table) == FENCED_OUT:
            return
        log.warning("table %s: owner lease lost (a newer owner claimed it); letting go", table)
        self.epochs[table] = FENCED_OUT
        self._heads.pop(table, None)
        self._events.pop(table, None)
        self._versions.pop(table, None)
        self._firsts.pop(table, None)
        self._callbacks.pop(table, None)
        self._dirty.pop(table, None)
        self._urgent.discard(table)
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

    def _queue_buffered(
        self, batch: _Batch, *, everything: bool
    ) -> tuple[list[str], dict[str, list[bytes]], dict[str, SnapshotFn], dict[str, int],
               dict[str, int]]:
        """Queue one fenced append per table on ``batch``; the tables in batch order, and what
        was taken from the buffers (put back if the batch fails). Snapshots not yet due stay
        buffered unless ``everything``."""
        now = asyncio.get_running_loop().time()
        keys = self.keys
        events, self._events = self._events, {}
        versions, self._versions = self._versions, {}
        firsts, self._firsts = self._firsts, {}
        taken: dict[str, SnapshotFn] = {}
        packed_snapshots: dict[str, bytes] = {}
        if self._dirty:
            snapshot_at = self._snapshot_at
            urgent, self._urgent = self._urgent, set()
            if everything or now >= self._due_at:
                due: list[tuple[str, SnapshotFn]] = []
                waiting: dict[str, SnapshotFn] = {}
                due_at = float("inf")
                for table, snapshot in self._dirty.items():
                    at = snapshot_at.get(table, -SNAPSHOT_INTERVAL) + SNAPSHOT_INTERVAL
                    if everything or table in urgent or now >= at:
                        due.append((table, snapshot))
                    else:
                        waiting[table] = snapshot
                        if at < due_at:
                            due_at = at
                self._dirty, self._due_at = waiting, due_at
            else:
                # Only the urgent tables can be due (see mark_dirty): the others wait.
                waiting = self._dirty
                due = [(table, waiting.pop(table)) for table in urgent if table in waiting]
            for table, snapshot in due:
                try:
                    packed_snapshots[table] = _packer.pack(snapshot())
                except Exception:
                    # A bug in one table's state must not lose the events already taken
                    # from the buffer (nor stop the flusher): that snapshot is skipped.
                    log.exception("table %s: snapshot not written", table)
                    continue
                snapshot_at[table] = now
                taken[table] = snapshot
            if waiting and self._later is None:
                self._later = asyncio.get_running_loop().call_later(
                    SNAPSHOT_INTERVAL, self._wake_later
                )
        ttl = b"%d" % self._log_ttl_ms
        cap = b"%d" % self._settings.event_log_max
        sha = self._append_sha
        order: list[str] = []
        heads = self._heads
        for table in dict.fromkeys([*events, *packed_snapshots]):
            # The fixed part of a table's fenced append (script, keys, epoch, TTL, cap) is
            # built and RESP-encoded once per epoch, not on every flush.
            head = heads.get(table)
            if head is None:
                args = (b"EVALSHA", sha, b"3", keys.table_lease(table).encode(),
                        keys.table_events(table).encode(), keys.table_snapshot(table).encode(),
                        self._epoch_arg(table), ttl, cap)
                head = heads[table] = (args, b"".join(b"$%d\r\n%b\r\n" % (len(a), a)
                                                      for a in args))
            batch.add_headed(head[0], head[1], packed_snapshots.get(table, b""),
                             _first_arg(firsts, table), *events.get(table, ()))
            order.append(table)
        if now - self._pruned_at > SNAPSHOT_INTERVAL:
            self._prune(now)
        return order, events, taken, versions, firsts

    def _put_back(self, events: dict[str, list[bytes]], snapshots: dict[str, SnapshotFn],
                  versions: dict[str, int] | None = None,
                  firsts: dict[str, int] | None = None) -> None:
        """A write failed (or its outcome is unknown): its events go back in front of what
        was buffered since, to be written again (the scripts skip the versions already
        stored), its snapshots back unless a newer one is waiting. A table fenced out
        meanwhile gets nothing back."""
        for table, items in events.items():
            if self.epochs.get(table) == FENCED_OUT:
                continue
            newer = self._events.get(table)
            self._events[table] = items if newer is None else items + newer
            first = (firsts or {}).get(table)
            if first is not None:
                self._firsts[table] = first
            else:
                self._firsts.pop(table, None)
        for table, version in (versions or {}).items():
            self._versions.setdefault(table, version)
        for table, snapshot in snapshots.items():
            self._dirty.setdefault(table, snapshot)
            self._snapshot_at.pop(table, None)
            self._urgent.add(table)

    def _wake_later(self) -> None:
        self._later = None
        self._wake.set()

    def _prune(self, now: float) -> None:
        """Forget the times of tables that have been quiet (their next write starts afresh)."""
        self._pruned_at = now
        self._snapshot_at = {
            t: at for t, at in self._snapshot_at.items() if now - at < SNAPSHOT_INTERVAL
        }

    async def _flush_locked(self, *, everything: bool = False) -> None:
        if not self._events and not self._dirty:
            return
        batch = _Batch(self._flush_conn, cluster=self._cluster)
        order, events, snapshots, versions, firsts = self._queue_buffered(
            batch, everything=everything)
        if not batch.count:
            return
        started = time.perf_counter()
        try:
            replies = await batch.execute(self.redis)
        except NoScriptError:
            self._put_back(events, snapshots, versions, firsts)
            await self.load_scripts()
            raise
        except BaseException as exc:
            self._put_back(events, snapshots, versions, firsts)
            if not isinstance(exc, asyncio.CancelledError):
                self.redis_up = False
            raise
        self.metrics.redis_rtt.observe(time.perf_counter() - started)
        for table, reply in zip(order, replies, strict=True):
            if reply == -1:
                self.fenced_out(table)
            else:
                version = versions.get(table)
                if version is not None:
                    self._tell_stored(table, version)

    def _tell_stored(self, table: str, version: int) -> None:
        """Tell ``table`` (its own callback, else :attr:`on_stored`) that its events up to
        ``version`` are stored."""
        callback = self._callbacks.get(table)
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
        return self.store_id or ""

    async def check_store(self, timeout: float = 2.0) -> tuple[bool, bool]:
        """(Redis answered, the store was lost): one GET of the store's identity. Lost means
        answered with no identity or another one than this node knows (emptied, replaced).
        Not lost when this node never knew one (:meth:`claim_store` not done)."""
        try:
            async with asyncio.timeout(timeout):  # no task of its own, as wait_for makes
                # (with the other reads of the tick's duties due now: one round trip)
                found = await reads(self.redis).get(self.keys.store_id)
        except (RedisError, OSError, TimeoutError):
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
        self._events.clear()
        self._versions.clear()
        self._firsts.clear()
        self._callbacks.clear()
        self._dirty.clear()
        self._urgent.clear()
        self._heads.clear()
        self.epochs.clear()
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
        if lost:
            self.store_lost()
        if up and self.store_id is None:
            # SET NX: of several nodes noticing the same loss, one id is written. A fresh
            # Redis has none of the scripts sent by hash either.
            with contextlib.suppress(RedisError, OSError):
                await self.claim_store()
                await self.load_scripts()
        if up:
            self.metrics.redis_rtt.observe(time.perf_counter() - started)
        if up != self.redis_up:
            log.warning("Redis is %s", "back" if up else "unreachable")
        self.redis_up = up
        self.metrics.redis_up.set(1 if up else 0)

    async def load_scripts(self) -> None:
        """Load the script sent by hash in hand-packed batches (``EVALSHA``): the fenced
        append of the flush (on a cluster, on every master)."""
        await self.redis.script_load(self._fenced_append.script)

    def start(self) -> None:
        self._task = asyncio.create_task(self.run_flusher(), name="write-behind")
        self.tick.add("redis-check", self._settings.redis_check_interval, self.check_once,
                      first=0, logger=log, what="Redis check")

    async def stop(self) -> None:
        """Stop the flusher and write what is left (nothing buffered is lost on shutdown)."""
        await self.tick.remove("redis-check")
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

    async def write_result(
        self, table: str, result: dict[str, Any], inbox: Iterable[tuple[str, dict[str, Any]]]
    ) -> None:
        """Write ``table``'s buffered events and snapshot and append ``result`` to its results
        in one fenced script (``fenced_result.lua``), then each ``(player, event)`` to that
        player's inbox (a pipeline of its own: another hash slot). Waits for a flush in
        flight first, so the log stays in version order and :attr:`on_stored` is told the
        truth. Raises :class:`Fenced` (nothing written) when another node owns the table."""
        result_json = json.dumps(result, separators=(",", ":"))
        entries = [(p, json.dumps(e, separators=(",", ":"))) for p, e in inbox]
        async with self._lock:
            events = self._events.pop(table, None)
            version = self._versions.pop(table, None)
            first = self._firsts.pop(table, None)
            snapshot = self._dirty.pop(table, None)
            self._urgent.discard(table)
            keys = self.keys
            try:
                packed = b"" if snapshot is None else _packer.pack(snapshot())
                reply = await self._fenced_result(
                    keys=[keys.table_lease(table), keys.table_events(table),
                          keys.table_snapshot(table), keys.table_results(table)],
                    args=[self._epoch_arg(table), self._log_ttl_ms,
                          self._settings.event_log_max, packed, result_json,
                          b"" if first is None else b"%d" % first,
                          str(result.get("game_id") or ""), *(events or ())],
                )
            except BaseException as exc:
                # Nothing of it is lost: the events and snapshot go back to the buffer, and
                # the caller tries again.
                self._put_back({table: events} if events else {},
                               {table: snapshot} if snapshot is not None else {},
                               {table: version} if version is not None else {},
                               {table: first} if first is not None else {})
                if not isinstance(exc, asyncio.CancelledError):
                    self.redis_up = False
                raise
        if int(reply) == -1:
            self.fenced_out(table)
            raise Fenced(table)
        if version is not None:
            self._tell_stored(table, version)
        if entries:
            ttl_ms = int(self._settings.inbox_ttl * 1000)
            cap = self._settings.inbox_max
            async with self.redis.pipeline(transaction=False) as pipe:
                for player, entry in entries:
                    inbox_key = keys.inbox(player)
                    pipe.rpush(inbox_key, entry)
                    pipe.ltrim(inbox_key, -cap, -1)
                    pipe.pexpire(inbox_key, ttl_ms)
                await pipe.execute()

    async def write_inbox(
        self, inbox: Iterable[tuple[str, dict[str, Any]]], *, table: str | None = None,
        note: dict[str, Any] | None = None, game: str | None = None,
    ) -> None:
        """Append each ``(player, event)`` to that player's inbox and, with ``note``, that
        record to ``table``'s results (a settlement that failed), in one awaited pipeline;
        with ``game`` (its id), that game is marked as having its rating events in the inboxes
        (:meth:`inboxed`: a node taking the table over does not write them again)."""
        ttl_ms = int(self._settings.inbox_ttl * 1000)
        cap = self._settings.inbox_max
        async with self.redis.pipeline(transaction=False) as pipe:
            for player, event in inbox:
                key = self.keys.inbox(player)
                pipe.rpush(key, json.dumps(event, separators=(",", ":")))
                pipe.ltrim(key, -cap, -1)
                pipe.pexpire(key, ttl_ms)
            if note is not None and table is not None:
                key = self.keys.table_results(table)
                pipe.rpush(key, json.dumps(note, separators=(",", ":")))
                pipe.pexpire(key, self._log_ttl_ms)
            await pipe.execute()
        if game is not None and table is not None:
            # After the entries are stored (on a cluster they are written node by node).
            key = self.keys.table_inboxed(table)
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.sadd(key, game)
                pipe.pexpire(key, self._log_ttl_ms)
                await pipe.execute()

    async def keep_in_inbox(self, events: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Keep each ``(player, event)`` that has an ``event_id`` in that player's inbox (the
        others are not kept), once: an id already there is not added again
        (``inbox_add.lua``, one call per player: each inbox is its own hash slot)."""
        by_player: dict[str, list[str]] = {}
        for player, event in events:
            if "event_id" not in event:
                continue
            by_player.setdefault(player, []).extend(
                (str(event["event_id"]), json.dumps(event, separators=(",", ":"))))
        if not by_player:
            return
        cap, ttl_ms = self._settings.inbox_max, int(self._settings.inbox_ttl * 1000)
        await asyncio.gather(*(
            self._inbox_add(keys=[self.keys.inbox(player)], args=[cap, ttl_ms, *args])
            for player, args in by_player.items()))

    async def has_result(self, table: str, game_id: str) -> bool:
        """Whether ``table``'s results hold ``game_id`` (its end was stored)."""
        raw = await _aw(self.redis.lrange(self.keys.table_results(table), 0, -1))
        for entry in raw:
            try:
                record = json.loads(entry)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("game_id") == game_id:
                return True
        return False

    async def inboxed(self, table: str, game_id: str) -> bool:
        """Whether ``game_id``'s rating events were written to the inboxes (see
        :meth:`write_inbox`)."""
        return bool(await _aw(self.redis.sismember(self.keys.table_inboxed(table), game_id)))

    async def inbox(self, player: str) -> list[dict[str, Any]]:
        """Every undelivered rating event of ``player``, oldest first (nothing is removed)."""
        raw = await _aw(self.redis.lrange(self.keys.inbox(player), 0, -1))
        return [json.loads(r) for r in raw]

    async def inbox_remove(self, player: str, event_ids: list[str]) -> int:
        """Remove the inbox entries whose ``event_id`` is one of ``event_ids`` (delivered)."""
        if not event_ids:
            return 0
        return int(await self._inbox_remove(keys=[self.keys.inbox(player)], args=event_ids))

    async def ack_inbox(self, player: str, count: int) -> None:
        """Remove the ``count`` oldest inbox entries (they were delivered); newer ones stay."""
        if count > 0:
            await _aw(self.redis.ltrim(self.keys.inbox(player), count, -1))

    # --- event log -----------------------------------------------------------------------

    async def events_since(self, table: str, since: int) -> list[dict[str, Any]]:
        """Logged events of ``table`` with ``v > since``, in order (flushes the buffer first)."""
        await self.flush()
        raw = await _aw(self.redis.lrange(self.keys.table_events(table), 0, -1))
        # See write_result: the list is nearly in order, and a write retried after Redis
        # failed mid-way may have stored an event twice; each version is kept once.
        by_version = {int(e.get("v", 0)): e for e in map(msgpack.unpackb, raw)}
        return [by_version[v] for v in sorted(by_version) if v > since]

    async def events_between(self, table: str, since: int, upto: int,
                             last: int) -> list[dict[str, Any]]:
        """Logged events of ``table`` with ``since < v <= upto``, in order (flushes the buffer
        first); ``last`` is the table's latest version. Reads one range of the log, not all
        of it: each version is stored once, so version ``v`` is ``last - v`` places from the
        log's end (a slack absorbs a few repeated or newer entries; when the range still
        misses the versions, the whole log is read, as :meth:`events_since` does)."""
        await self.flush()
        if upto <= since:
            return []
        first = -(last - since) - LOG_SLACK
        end = min(-1, -(last - upto + 1) + LOG_SLACK)
        raw = await _aw(self.redis.lrange(self.keys.table_events(table), first, end))
        by_version = {int(e.get("v", 0)): e for e in map(msgpack.unpackb, raw)}
        found = [by_version[v] for v in sorted(by_version) if since < v <= upto]
        if len(found) == upto - since or (raw and len(raw) < end - first + 1
                                            and min(by_version, default=0) > since + 1):
            return found  # all of them, or the log starts after since (trimmed): no more
        return [e for e in await self.events_since(table, since) if e["v"] <= upto]

    async def snapshot(self, table: str) -> dict[str, Any] | None:
        raw = await self.redis.get(self.keys.table_snapshot(table))
        return None if raw is None else dict(msgpack.unpackb(raw))

    # --- ownership (owner records, heartbeats) and lobby index ----------------------------

    async def claim(self, table: str, node: str, *, new: bool, epoch: int = 0
                    ) -> tuple[int, str]:
        """Claim ``table``'s owner record for ``node``: ``new`` for a table just made here
        (no record may exist yet), else a takeover of the record as read (``epoch``: the
        epoch read just before; the caller judged its owner dead or the table handed over).
        Returns (the new epoch, the previous owner node): epoch 0 when not claimed. The table enters
        ``node``'s table set first (so a node that dies right after the claim leaves it where
        the scan looks) and, once taken over, leaves the previous owner's; the caller
        :meth:`adopt`\\ s the epoch."""
        keys = self.keys
        await _aw(self.redis.sadd(keys.node_tables(node), table))
        reply = await self._lease_claim(
            keys=[keys.table_lease(table)],
            args=[node, self._log_ttl_ms, "new" if new else "takeover", epoch],
        )
        claimed, previous = int(reply[0]), _text(reply[1])
        if not claimed:
            await _aw(self.redis.srem(keys.node_tables(node), table))
        elif previous and previous != node:
            await _aw(self.redis.srem(keys.node_tables(previous), table))
        return claimed, previous

    async def heartbeat(self, node: str, node_ttl: float, online: int | None = None) -> bool:
        """Say ``node`` is alive for ``node_ttl`` seconds, with ``online``, the players
        connected to it (``GET /api/online``), in one script call, whatever the number of
        tables. True when the node's time had run out before this call: its peers
        may have taken it for dead and claimed some of its tables (see :meth:`lost_tables`).
        Keeps the offset of this node's clock from Redis's (:meth:`nodes` is in local time)."""
        now_ms, previous = (int(x) for x in await self._node_heartbeat(
            keys=[self.keys.nodes, self.keys.online],
            args=[node, int(node_ttl * 1000), "" if online is None else online]))
        self.clock_offset = now_ms / 1000 - time.time()
        return 0 <= previous < now_ms

    async def lost_tables(self, node: str) -> list[str]:
        """The tables this node writes as their owner whose record names another owner (or
        epoch), is done by someone else, or is gone: read once each, in one pipeline (after
        this node was taken for dead). The caller lets them go (their writes would be
        refused anyway)."""
        owned = [(t, e) for t, e in self.epochs.items() if e != FENCED_OUT]
        if not owned:
            return []
        leases = await self.leases([t for t, _ in owned])
        lost, kept = [], []
        for table, epoch in owned:
            lease = leases.get(table)
            if lease is None or lease.node != node or lease.epoch != epoch:
                if self.epochs.get(table) == epoch:
                    lost.append(table)
            else:
                kept.append(table)
        if kept:
            # A peer's scan may have dropped them from this node's set while it was dead.
            await _aw(self.redis.sadd(self.keys.node_tables(node), *kept))
        return lost

    async def release(self, table: str, *, done: bool) -> bool:
        """Give back the owner record of ``table`` (this node stops owning it): ``done`` when
        the table finished or closed (never claimed again; it leaves this node's table set),
        else ``free`` for a peer to claim it at once (it stays in the set, where the peers
        look: the claimant takes it out). False when the record was not this node's any
        more."""
        epoch = self.epochs.get(table)
        if epoch is None or epoch == FENCED_OUT:
            return False
        ok = await self._lease_release(keys=[self.keys.table_lease(table)],
                                       args=[epoch, "done" if done else "free"])
        # Handed over: a write still buffered for it is refused from now on; finished: it
        # has nothing more to write.
        self._versions.pop(table, None)
        self._callbacks.pop(table, None)
        self._heads.pop(table, None)
        if done:
            self.epochs.pop(table, None)
            await _aw(self.redis.srem(self.keys.node_tables(self._settings.node_id), table))
        else:
            # Whatever is still buffered for it would be refused: dropped now.
            self.epochs[table] = FENCED_OUT
            self._events.pop(table, None)
            self._firsts.pop(table, None)
            self._dirty.pop(table, None)
            self._urgent.discard(table)
        return bool(int(ok))

    async def lease(self, table: str) -> Lease | None:
        """``table``'s owner record as stored, or None (no such table, or long gone)."""
        return _lease(await _aw(self.redis.hmget(self.keys.table_lease(table), LEASE_FIELDS)))

    async def leases(self, tables: list[str]) -> dict[str, Lease | None]:
        """The owner records of ``tables``, in one pipeline (a read per table; on a cluster
        the client sends each slot's share to its master)."""
        pipe = self.redis.pipeline(transaction=False)
        for table in tables:
            pipe.hmget(self.keys.table_lease(table), LEASE_FIELDS)
        rows = await pipe.execute() if tables else []
        return {t: _lease(row) for t, row in zip(tables, rows, strict=True)}

    async def node_tables(self, node: str) -> list[str]:
        """The tables in ``node``'s table set (a hint: see :meth:`claim`)."""
        return [_text(t) for t in await _aw(self.redis.smembers(self.keys.node_tables(node)))]

    async def unindex(self, node: str, tables: list[str]) -> None:
        """Take ``tables`` out of ``node``'s table set (finished, claimed by another, or gone
        with their keys)."""
        if tables:
            await _aw(self.redis.srem(self.keys.node_tables(node), *tables))

    async def nodes(self) -> dict[str, float]:
        """Every node that said it is alive, with the time (epoch seconds, by this node's
        clock: Redis's, less the offset the last heartbeat measured) until which it counts
        as alive."""
        raw = await reads(self.redis).zrange_with_scores(self.keys.nodes)
        offset = self.clock_offset
        return {_text(node): float(score) / 1000 - offset for node, score in raw}

    async def node_until(self, node: str) -> float | None:
        """Until when ``node`` counts as alive (as :meth:`nodes`, for one node); None when
        it is not in the node set."""
        score = await _aw(self.redis.zscore(self.keys.nodes, node))
        return None if score is None else float(score) / 1000 - self.clock_offset

    async def node_gone(self, node: str) -> None:
        """``node`` stops (shutdown): it counts as dead from now on."""
        now_ms = int((time.time() + self.clock_offset) * 1000)
        await _aw(self.redis.zadd(self.keys.nodes, {node: now_ms}))

    async def forget_nodes(self, nodes: list[str]) -> None:
        """Drop nodes long dead from the node set, with what is left of their table sets."""
        if nodes:
            await _aw(self.redis.zrem(self.keys.nodes, *nodes))
            await _aw(self.redis.hdel(self.keys.online, *nodes))
            await _aw(self.redis.delete(*[self.keys.node_tables(n) for n in nodes]))

    async def owner_of(self, table: str) -> str | None:
        """The node holding (or last holding) ``table``'s lease; None when there is none."""
        raw = await _aw(self.redis.hget(self.keys.table_lease(table), "node"))
        return None if raw is None else _text(raw)

    async def ping(self, timeout: float = 2.0) -> bool:
        try:
            async with asyncio.timeout(timeout):
                return bool(await self.redis.ping())
        except (RedisError, OSError, TimeoutError):
            return False

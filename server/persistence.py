"""What the match server keeps in Redis: table event logs, snapshots, results, seats, presence,
the lobby index and rating inboxes. The one module (with ``accounts``) that talks to Redis for
games; its methods return plain values.

Write-behind: the per-move path never waits for Redis. :meth:`Persistence.append_event` and
:meth:`Persistence.mark_dirty` only buffer; a flusher task writes everything buffered every
``flush_interval`` seconds in one pipeline for all tables. Each Redis command costs the client
several microseconds to pack and its reply to parse, so a flush sends as few as it can: one
``RPUSH`` per table with new events; ``PEXPIRE`` on a log only when it was not refreshed in
the last :data:`EXPIRE_REFRESH` seconds; ``LTRIM`` only once a log has grown past
``event_log_max`` (the ``RPUSH`` reply says its length); the snapshot ``SET`` at most every
:data:`SNAPSHOT_INTERVAL` seconds per table, except that a snapshot marked urgent (the table's
status changed) goes out with a flush that starts at once. A finished game is different:
:meth:`write_result` writes that table's buffered events and snapshot, the result and the
rating inbox entries in one awaited pipeline of its own, before anyone is told the game ended.
Periodic flushes hold one lock, so they reach Redis in order; a result's pipeline does not
wait for them, so a log may hold a few events out of order and is read sorted by version.

Keys (see ``keys.py``): ``{t:T}:events`` (capped list of events: msgpack, the same maps
clients receive), ``{t:T}:snapshot`` (msgpack), ``{t:T}:results`` (JSON), ``{t:T}:owner``,
``{p:P}:seat``, ``{p:P}:presence``, ``{p:P}:inbox`` (JSON), ``lobby:tables``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, cast

import msgpack
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.config import Settings
from server.keys import Keys
from server.metrics import Metrics
from server.protocol.messages import TableMode

log = logging.getLogger(__name__)

SnapshotFn = Callable[[], dict[str, Any]]
StoredFn = Callable[[int], None]
ADDRESS_FIELD = "address"
SNAPSHOT_INTERVAL = 60.0
"""Seconds between two snapshot writes of one table. Its event log is written every flush and
holds every change; the snapshot is what other nodes read for a table's status, and a new
status is written at once (urgent), so the periodic write only refreshes the state it shows
(at 5 s it came on nearly every other move at human pace)."""
FLUSH_BATCH = 64
"""Buffered events that make a flush go at ``flush_interval``; fewer wait up to
``flush_interval`` × :data:`SLOW_FLUSH_FACTOR` (capped at :data:`SLOW_FLUSH_MAX`), so that at a
human pace one write carries many moves: a write costs about the same CPU for 1 event or 50."""
SLOW_FLUSH_FACTOR = 10
SLOW_FLUSH_MAX = 0.5
LISTED_MODES = tuple(str(mode) for mode in TableMode)
"""Every table mode, for unlisting without a mode (and the modes a list request may name)."""
PAGE_CACHE_MAX = 1024
"""Table-list pages kept at once (see :meth:`Persistence.table_page_raw`)."""
EXPIRE_REFRESH = 60.0
"""Seconds between two ``PEXPIRE`` of one table's event log (capped at a tenth of its TTL)."""
T = TypeVar("T")


_packer = msgpack.Packer(use_bin_type=True)


class _Batch:
    """Redis commands written as RESP by hand, sent in one write and answered in order.

    The write-behind flush sends hundreds of small commands at a time; redis-py's pipeline
    costs several microseconds of Python per command to pack and parse, this about a third of
    it. Any failure drops the connection (unread replies must not reach the next user) and
    raises, like a pipeline would.
    """

    __slots__ = ("count", "parts")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.count = 0

    def add(self, *args: bytes) -> None:
        parts = self.parts
        parts.append(b"*%d\r\n" % len(args))
        for arg in args:
            parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
        self.count += 1

    async def execute(self, redis: aioredis.Redis) -> list[Any]:
        pool: Any = redis.connection_pool  # get_connection is not typed in redis-py 5.2
        conn = await pool.get_connection("_")
        try:
            await conn.send_packed_command(self.parts)  # pings first only if long idle
            return [await conn.read_response(disable_decoding=True) for _ in range(self.count)]
        except BaseException:
            await conn.disconnect(nowait=True)
            raise
        finally:
            await pool.release(conn)


def _aw(value: Awaitable[T] | T) -> Awaitable[T]:
    """redis-py types its commands as "awaitable or value"; the asyncio client always awaits."""
    return cast(Awaitable[T], value)


def listing_score(summary: dict[str, Any]) -> float:
    """The lobby index's order: open tables first, then newest first."""
    rank = 0 if summary.get("status") == "open" else 1
    created_ms = int(float(summary.get("created_at") or 0) * 1000)
    return rank * 1e13 + (1e13 - created_ms)


def _call_stored(stored: dict[str, tuple[int, StoredFn]]) -> None:
    """Tell each table that its events up to the version given are stored."""
    for table, (version, callback) in stored.items():
        try:
            callback(version)
        except Exception:
            log.exception("table %s: announcing stored events failed", table)


def _load_script(name: str) -> str:
    return importlib.resources.files("server").joinpath("lua", name).read_text("utf-8")


class Persistence:
    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings,
                 metrics: Metrics | None = None) -> None:
        self.redis = redis
        self.metrics = metrics if metrics is not None else Metrics(enabled=False)
        # False from a failed Redis check or write until a check answers again: new actions
        # are refused with ``unavailable`` and /readyz, /healthz say so.
        self.redis_up = True
        self._monitor: asyncio.Task[None] | None = None
        self._pages: dict[tuple[str | None, int, int],
                          tuple[float, asyncio.Future[tuple[int, list[bytes]]]]] = {}
        self.keys = keys
        self._settings = settings
        self._events: dict[str, list[bytes]] = {}
        # Store before announce: each table's latest buffered version and its callback.
        self._stored: dict[str, tuple[int, StoredFn]] = {}
        self._count = 0  # events buffered in _events
        self._hurry = asyncio.Event()  # set with an urgent snapshot or a full batch
        self._dirty: dict[str, SnapshotFn] = {}
        self._urgent: set[str] = set()
        self._trim: set[str] = set()
        self._snapshot_at: dict[str, float] = {}  # loop time of each table's last snapshot
        self._expire_at: dict[str, float] = {}  # loop time of each log's last PEXPIRE
        self._pruned_at = 0.0
        self._later: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._release_seat = redis.register_script(_load_script("release_seat.lua"))
        self._inbox_remove = redis.register_script(_load_script("inbox_remove.lua"))
        self._lobby_list = redis.register_script(_load_script("lobby_list.lua"))
        self._lobby_page = redis.register_script(_load_script("lobby_page.lua"))
        self._log_ttl_ms = int(settings.event_log_ttl * 1000)
        self._expire_refresh = min(EXPIRE_REFRESH, settings.event_log_ttl / 10)
        self._seat_ttl_ms = int(max(settings.event_log_ttl, 3600.0) * 1000)

    # --- write-behind ------------------------------------------------------------------

    def append_event(self, table: str, version: int, event: bytes,
                     stored: StoredFn | None = None) -> None:
        """Buffer one event (already msgpack-encoded; its ``version``) for the table's log.
        Never blocks. Once a write holding it (and every earlier event of the table) has
        succeeded, ``stored(version)`` is called: the table announces it then."""
        if stored is not None:
            self._stored[table] = (version, stored)
        pending = self._events.get(table)
        if pending is None:
            self._events[table] = [event]
            self._wake.set()
        else:
            pending.append(event)
        self._count += 1
        if self._count == FLUSH_BATCH:
            self._hurry.set()

    def mark_dirty(self, table: str, snapshot: SnapshotFn, *, urgent: bool = False) -> None:
        """Ask for the table's snapshot to be written (computed when it is written): with the
        next flush when ``urgent`` or when the table has none from the last
        :data:`SNAPSHOT_INTERVAL` seconds, else once that interval has passed."""
        self._dirty[table] = snapshot
        if urgent:
            self._urgent.add(table)
            self._hurry.set()
            self._wake.set()

    @property
    def pending_events(self) -> int:
        return sum(len(v) for v in self._events.values())

    async def flush(self, *, everything: bool = False) -> None:
        """Write what is buffered now (one round trip); with ``everything``, also the
        snapshots that are not due yet."""
        async with self._lock:
            await self._flush_locked(everything=everything)

    def _queue_buffered(
        self, batch: _Batch, *, everything: bool
    ) -> tuple[list[str], dict[str, list[bytes]], dict[str, SnapshotFn]]:
        """Queue the buffered writes on ``batch``; the tables whose ``RPUSH`` come first, in
        order, and what was taken from the buffers (put back if the batch fails). Snapshots
        not yet due stay buffered unless ``everything``."""
        now = asyncio.get_running_loop().time()
        keys = self.keys
        events, self._events = self._events, {}
        self._count = 0
        taken: dict[str, SnapshotFn] = {}
        expire_at = self._expire_at
        refresh = self._expire_refresh
        log_ttl = b"%d" % self._log_ttl_ms
        pushed = list(events)
        for table, items in events.items():
            batch.add(b"RPUSH", keys.table_events(table).encode(), *items)
        for table in pushed:
            if now - expire_at.get(table, -refresh) >= refresh:
                batch.add(b"PEXPIRE", keys.table_events(table).encode(), log_ttl)
                expire_at[table] = now
        if self._trim:
            cap = b"%d" % -self._settings.event_log_max
            for table in self._trim:
                batch.add(b"LTRIM", keys.table_events(table).encode(), cap, b"-1")
            self._trim = set()
        if self._dirty:
            snapshot_at = self._snapshot_at
            urgent, self._urgent = self._urgent, set()
            waiting: dict[str, SnapshotFn] = {}
            for table, snapshot in self._dirty.items():
                if (everything or table in urgent
                        or now - snapshot_at.get(table, -SNAPSHOT_INTERVAL) >= SNAPSHOT_INTERVAL):
                    try:
                        packed = _packer.pack(snapshot())
                    except Exception:
                        # A bug in one table's state must not lose the events already taken
                        # from the buffer (nor stop the flusher): that snapshot is skipped.
                        log.exception("table %s: snapshot not written", table)
                        continue
                    batch.add(b"SET", keys.table_snapshot(table).encode(), packed, b"PX",
                              log_ttl)
                    snapshot_at[table] = now
                    taken[table] = snapshot
                else:
                    waiting[table] = snapshot
            self._dirty = waiting
            if waiting and self._later is None:
                self._later = asyncio.get_running_loop().call_later(
                    SNAPSHOT_INTERVAL, self._wake_later
                )
        if now - self._pruned_at > refresh:
            self._prune(now)
        return pushed, events, taken

    def _put_back(self, events: dict[str, list[bytes]], snapshots: dict[str, SnapshotFn]
                  ) -> None:
        """A write failed: its events go back in front of what was buffered since (so the
        log keeps every version), its snapshots back unless a newer one is waiting."""
        for table, items in events.items():
            newer = self._events.get(table)
            self._events[table] = items if newer is None else items + newer
            self._count += len(items)
            self._expire_at.pop(table, None)
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
        refresh = self._expire_refresh
        self._expire_at = {t: at for t, at in self._expire_at.items() if now - at < refresh}
        self._snapshot_at = {
            t: at for t, at in self._snapshot_at.items() if now - at < SNAPSHOT_INTERVAL
        }

    async def _flush_locked(self, *, everything: bool = False) -> None:
        if not self._events and not self._dirty and not self._trim:
            if self._stored:  # stored by write_result while a flush was in flight
                stored, self._stored = self._stored, {}
                _call_stored(stored)
            return
        batch = _Batch()
        stored, self._stored = self._stored, {}
        pushed, events, snapshots = self._queue_buffered(batch, everything=everything)
        if not batch.count:
            _call_stored(stored)  # no events buffered: only announcements write_result left
            return
        started = time.perf_counter()
        try:
            replies = await batch.execute(self.redis)
        except BaseException:
            self._put_back(events, snapshots)
            self._stored = {**stored, **self._stored}
            self.redis_up = False
            raise
        _call_stored(stored)
        self.metrics.redis_rtt.observe(time.perf_counter() - started)
        cap = self._settings.event_log_max
        for table, length in zip(pushed, replies, strict=False):
            if isinstance(length, int) and length > cap:
                self._trim.add(table)
        if self._trim:
            self._wake.set()

    async def run_flusher(self) -> None:
        """Flush every ``flush_interval`` while there is something to write, until cancelled;
        at once when a snapshot is urgent (a table's new status should be visible to other
        nodes as soon as its players can see it)."""
        interval = self._settings.flush_interval
        slow = max(interval, min(SLOW_FLUSH_MAX, interval * SLOW_FLUSH_FACTOR))
        while True:
            await self._wake.wait()
            self._wake.clear()
            # Events waiting to be announced (store before announce) go at once.
            if not self._urgent and not self._stored:
                await asyncio.sleep(interval)
            if (not self._urgent and not self._stored and self._count < FLUSH_BATCH
                    and slow > interval):
                # A slow pace: wait for more events (or something urgent) before writing.
                self._hurry.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._hurry.wait(), slow - interval)
            try:
                await self.flush()
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

    async def run_monitor(self) -> None:
        """Ping Redis every ``redis_check_interval``: :attr:`redis_up` and the metrics."""
        interval = self._settings.redis_check_interval
        while True:
            started = time.perf_counter()
            # A generous timeout: a node under load answers late, not never (an unreachable
            # Redis refuses the connection at once).
            up = await self.ping(timeout=max(interval, 2.0))
            if up:
                self.metrics.redis_rtt.observe(time.perf_counter() - started)
            if up != self.redis_up:
                log.warning("Redis is %s", "back" if up else "unreachable")
            self.redis_up = up
            self.metrics.redis_up.set(1 if up else 0)
            await asyncio.sleep(interval)

    def start(self) -> None:
        self._task = asyncio.create_task(self.run_flusher(), name="write-behind")
        self._monitor = asyncio.create_task(self.run_monitor(), name="redis-monitor")

    async def stop(self) -> None:
        """Stop the flusher and write what is left (nothing buffered is lost on shutdown)."""
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
            self._monitor = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._later is not None:
            self._later.cancel()
            self._later = None
        await self.flush(everything=True)

    # --- finished games ------------------------------------------------------------------

    async def write_result(
        self, table: str, result: dict[str, Any], inbox: Iterable[tuple[str, dict[str, Any]]]
    ) -> None:
        """Write ``table``'s buffered events and snapshot, append ``result`` to its results and
        each ``(player, event)`` to that player's inbox, in one awaited pipeline.

        It does not wait for a periodic flush in flight (the end of a game is on the path to
        both players' rating events), so this table's events may reach its list just before
        older ones still in that flush: readers order the log by version
        (:meth:`events_since`).
        """
        result_json = json.dumps(result, separators=(",", ":"))
        entries = [(p, json.dumps(e, separators=(",", ":"))) for p, e in inbox]
        ttl_ms = int(self._settings.inbox_ttl * 1000)
        cap = self._settings.inbox_max
        events = self._events.pop(table, None)
        if events:
            self._count -= len(events)
        snapshot = self._dirty.pop(table, None)
        self._urgent.discard(table)
        stored = self._stored.pop(table, None)
        try:
            replies = await self._write_result(table, events, snapshot, result_json, entries,
                                               ttl_ms, cap)
        except BaseException:
            if stored is not None:
                self._stored.setdefault(table, stored)
            # Nothing of it is lost: the events and snapshot go back to the buffer, and the
            # caller tries again. A pipeline that failed after Redis ran part of it may leave
            # an event twice (events_since keeps each version once) or the result twice in
            # the table's results (not deduped: a reader of that list may see a game twice).
            self._put_back({table: events} if events else {},
                           {table: snapshot} if snapshot is not None else {})
            self.redis_up = False
            raise
        if events and isinstance(replies[0], int) and replies[0] > self._settings.event_log_max:
            self._trim.add(table)
            self._wake.set()
        if stored is not None:
            if self._lock.locked():
                # A periodic flush in flight may still hold older events of this table: the
                # announcement waits for the next flush, which runs after it.
                newer = self._stored.get(table)
                if newer is None or newer[0] < stored[0]:
                    self._stored[table] = stored
                self._wake.set()
            else:
                _call_stored({table: stored})

    async def _write_result(
        self, table: str, events: list[bytes] | None, snapshot: SnapshotFn | None,
        result_json: str, entries: list[tuple[str, str]], ttl_ms: int, cap: int,
    ) -> list[Any]:
        keys = self.keys
        async with self.redis.pipeline(transaction=False) as pipe:
            if events:
                pipe.rpush(keys.table_events(table), *events)
                pipe.pexpire(keys.table_events(table), self._log_ttl_ms)
            if snapshot is not None:
                pipe.set(keys.table_snapshot(table), _packer.pack(snapshot()),
                         px=self._log_ttl_ms)
            key = keys.table_results(table)
            pipe.rpush(key, result_json)
            pipe.pexpire(key, self._log_ttl_ms)
            for player, entry in entries:
                inbox_key = keys.inbox(player)
                pipe.rpush(inbox_key, entry)
                pipe.ltrim(inbox_key, -cap, -1)
                pipe.pexpire(inbox_key, ttl_ms)
            return list(await pipe.execute())

    async def write_inbox(
        self, inbox: Iterable[tuple[str, dict[str, Any]]], *, table: str | None = None,
        note: dict[str, Any] | None = None,
    ) -> None:
        """Append each ``(player, event)`` to that player's inbox and, with ``note``, that
        record to ``table``'s results (a settlement that failed), in one awaited pipeline."""
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

    async def snapshot(self, table: str) -> dict[str, Any] | None:
        raw = await self.redis.get(self.keys.table_snapshot(table))
        return None if raw is None else dict(msgpack.unpackb(raw))

    # --- ownership and lobby index -------------------------------------------------------

    async def set_owner(self, table: str, node: str) -> None:
        await self.redis.set(self.keys.table_owner(table), node, px=self._log_ttl_ms)

    async def owner_of(self, table: str) -> str | None:
        raw = await self.redis.get(self.keys.table_owner(table))
        return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)

    async def drop_owner(self, table: str) -> None:
        await self.redis.delete(self.keys.table_owner(table))

    async def list_table(self, table: str, summary: dict[str, Any]) -> None:
        """List (or update) ``table`` in the lobby index (one script, one round trip)."""
        data = json.dumps(summary, separators=(",", ":"))
        self._pages.clear()  # this node's own changes show at once (others' within the TTL)
        await self._lobby_list(
            keys=[self.keys.lobby, self.keys.lobby_index(),
                  self.keys.lobby_index(str(summary.get("mode")))],
            args=[table, data, listing_score(summary)],
        )

    async def unlist_table(self, table: str, mode: str | None = None) -> None:
        """Take ``table`` out of the lobby index (of every mode's index when ``mode`` is not
        given)."""
        self._pages.clear()
        modes = [mode] if mode is not None else list(LISTED_MODES)
        await self._lobby_list(
            keys=[self.keys.lobby, self.keys.lobby_index(),
                  *(self.keys.lobby_index(m) for m in modes)],
            args=[table, "", 0],
        )

    async def listed_tables(self) -> list[dict[str, Any]]:
        """Every listed table (unordered; reads the whole index: tests and tools only)."""
        raw = await _aw(self.redis.hvals(self.keys.lobby))
        return [json.loads(r) for r in raw]

    async def table_page(self, mode: str | None, offset: int, limit: int
                         ) -> tuple[int, list[dict[str, Any]]]:
        """One page of the lobby index in list order (open tables first, newest first) and
        the number of tables listed (of ``mode``): one ``EVALSHA``, whatever that number."""
        total, rows = await self.table_page_raw(mode, offset, limit)
        return total, [json.loads(r) for r in rows]

    async def table_page_raw(self, mode: str | None, offset: int, limit: int
                             ) -> tuple[int, list[bytes]]:
        """:meth:`table_page` with each summary as the JSON bytes stored. A page read in the
        last ``list_cache_ttl`` seconds is reused, and identical requests arriving while it
        is read share that one read (a flood of list requests costs Redis one read per page
        and period, and the node no parsing)."""
        ttl = self._settings.list_cache_ttl
        if ttl <= 0:
            return await self._read_page(mode, offset, limit)
        key = (mode, offset, limit)
        now = asyncio.get_running_loop().time()
        cached = self._pages.get(key)
        if cached is not None and cached[0] > now:
            return await cached[1]
        future = asyncio.ensure_future(self._read_page(mode, offset, limit))
        if len(self._pages) >= PAGE_CACHE_MAX:
            self._pages = {k: v for k, v in self._pages.items() if v[0] > now}
            if len(self._pages) >= PAGE_CACHE_MAX:
                self._pages.clear()
        self._pages[key] = (now + ttl, future)
        try:
            return await asyncio.shield(future)
        except BaseException:
            if self._pages.get(key, (0.0, None))[1] is future:
                del self._pages[key]  # a failed read is not kept
            raise

    async def _read_page(self, mode: str | None, offset: int, limit: int
                         ) -> tuple[int, list[bytes]]:
        reply = await self._lobby_page(keys=[self.keys.lobby, self.keys.lobby_index(mode)],
                                       args=[offset, limit])
        return int(reply[0]), [bytes(r) for r in reply[1:]]

    # --- seats (one live table per player) -----------------------------------------------

    async def take_seat(self, player: str, table: str) -> str | None:
        """Hold ``player``'s seat lock for ``table``. None on success, else the table that
        already holds it (taking the seat at the same table again succeeds)."""
        key = self.keys.seat(player)
        if await self.redis.set(key, table, nx=True, px=self._seat_ttl_ms):
            return None
        current = await self.redis.get(key)
        if current is None:  # released in between; try once more
            if await self.redis.set(key, table, nx=True, px=self._seat_ttl_ms):
                return None
            current = await self.redis.get(key)
        held = current.decode() if isinstance(current, bytes) else str(current)
        return None if held == table else held

    async def release_seat(self, player: str, table: str) -> None:
        await self._release_seat(keys=[self.keys.seat(player)], args=[table])

    async def seat_of(self, player: str) -> str | None:
        raw = await self.redis.get(self.keys.seat(player))
        return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)

    # --- presence ------------------------------------------------------------------------

    async def presence_join(self, player: str, node: str, address: str) -> None:
        """One more socket of ``player`` on ``node`` (called when its first one opens)."""
        key = self.keys.presence(player)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(key, node, 1)
            pipe.hset(key, ADDRESS_FIELD, address)
            pipe.pexpire(key, int(self._settings.presence_ttl * 1000))
            await pipe.execute()

    async def presence_leave(self, player: str, node: str) -> None:
        # The key may be gone (expired, or deleted under a closing node): HINCRBY makes it
        # again, so it gets the TTL too, and never stays for good.
        key = self.keys.presence(player)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(key, node, -1)
            pipe.pexpire(key, int(self._settings.presence_ttl * 1000))
            await pipe.execute()

    async def presence(self, player: str) -> tuple[list[str], str | None]:
        """Nodes where ``player`` has sockets, and the address of the latest one."""
        raw = await _aw(self.redis.hgetall(self.keys.presence(player)))
        nodes: list[str] = []
        address: str | None = None
        for k, v in raw.items():
            name = k.decode() if isinstance(k, bytes) else str(k)
            value = v.decode() if isinstance(v, bytes) else str(v)
            if name == ADDRESS_FIELD:
                address = value
            elif int(value) > 0:
                nodes.append(name)
        return nodes, address

    async def ping(self, timeout: float = 2.0) -> bool:
        try:
            return bool(await asyncio.wait_for(self.redis.ping(), timeout))
        except (RedisError, OSError, TimeoutError):
            return False

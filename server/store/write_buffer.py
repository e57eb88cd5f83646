"""The write-behind state of a node, in one object: the events and snapshots buffered per table
until a flush writes them, the owner epochs that fence every such write, and the fixed part of
each table's fenced append. No I/O here: :class:`server.store.persistence.Persistence` flushes
it (one :class:`~server.store.batch.Batch` a round trip) and its parts (``results.py``,
``owners.py``) take from it or drop from it what a finished, released or lost table had
buffered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack

from server.store.batch import Batch
from server.store.keys import Keys

log = logging.getLogger(__name__)

SnapshotFn = Callable[[], dict[str, Any]]
StoredFn = Callable[[int], None]
SNAPSHOT_INTERVAL = 60.0
"""Seconds between two snapshot writes of one table. Its event log is written every flush and
holds every change; the snapshot is what other nodes read for a table's status, and a new
status is written at once (urgent), so the periodic write only refreshes the state it shows
(at 5 s it came on nearly every other move at human pace)."""
FENCED_OUT = -1
"""The epoch of a table whose write was refused: every later write of it is refused too."""

_packer = msgpack.Packer(use_bin_type=True)


def pack(value: Any) -> bytes:
    packed: bytes = _packer.pack(value)
    return packed


@dataclass(slots=True)
class Taken:
    """What a flush took from the buffer: the tables in batch order, their events, snapshots,
    last and first buffered versions (all put back if the write fails), and whether
    snapshots not yet due wait in the buffer (the caller wakes a flush for them later)."""

    order: list[str]
    events: dict[str, list[bytes]]
    snapshots: dict[str, SnapshotFn]
    versions: dict[str, int]
    firsts: dict[str, int]
    waiting: bool


    def of(self, table: str) -> tuple[dict[str, list[bytes]], dict[str, SnapshotFn],
                                      dict[str, int], dict[str, int]]:
        """What was taken of ``table`` alone, as :meth:`WriteBuffer.put_back` takes it."""
        def one(part: dict[str, Any]) -> dict[str, Any]:
            return {table: part[table]} if table in part else {}
        return one(self.events), one(self.snapshots), one(self.versions), one(self.firsts)


@dataclass(slots=True)
class TableWrites:
    """One table's buffered writes, taken out to be written with its result."""

    events: list[bytes] | None
    version: int | None
    first: int | None
    snapshot: SnapshotFn | None


class WriteBuffer:
    """Buffered events and snapshots per table, and the owner epochs fencing them."""

    def __init__(self, keys: Keys, *, append_sha: bytes, log_ttl_ms: int,
                 log_max: int) -> None:
        self.keys = keys
        self.append_sha = append_sha
        self.log_ttl_ms = log_ttl_ms
        self.log_max = log_max
        self.events: dict[str, list[bytes]] = {}
        self.versions: dict[str, int] = {}  # table -> version of its last buffered event
        self.firsts: dict[str, int] = {}  # table -> version of its first buffered event
        self.callbacks: dict[str, StoredFn] = {}  # table -> its own "stored" callback
        self.dirty: dict[str, SnapshotFn] = {}
        self.urgent: set[str] = set()
        self.snapshot_at: dict[str, float] = {}  # loop time of each table's last snapshot
        # No dirty table's periodic snapshot is due before this loop time: until then a
        # flush looks at the urgent tables only, not at every dirty one (per move at a
        # human pace, that look grew with the tables).
        self.due_at = 0.0
        self.pruned_at = 0.0
        # Owner epoch of each table this node owns (FENCED_OUT once a write was refused).
        self.epochs: dict[str, int] = {}
        # Per table, the fixed arguments of its fenced append and their RESP encoding, made
        # once per epoch (dropped whenever the epoch changes or the table is given up).
        self.heads: dict[str, tuple[tuple[bytes, ...], bytes]] = {}

    # --- buffering -----------------------------------------------------------------------

    def append(self, table: str, version: int | None, packed: bytes,
               stored: StoredFn | None) -> bool:
        """Buffer one event; True when the table had nothing buffered (a flush is wanted)."""
        if version is not None:
            self.versions[table] = version
            if stored is not None:
                self.callbacks[table] = stored
        pending = self.events.get(table)
        if pending is None:
            if version is not None:
                self.firsts[table] = version
            self.events[table] = [packed]
            return True
        pending.append(packed)
        return False

    def mark_dirty(self, table: str, snapshot: SnapshotFn, *, urgent: bool) -> None:
        dirty = self.dirty
        if table not in dirty:
            at = self.snapshot_at.get(table)
            due = 0.0 if at is None else at + SNAPSHOT_INTERVAL
            if due < self.due_at:
                self.due_at = due
        dirty[table] = snapshot
        if urgent:
            self.urgent.add(table)

    @property
    def pending_events(self) -> int:
        return sum(len(v) for v in self.events.values())

    # --- epochs --------------------------------------------------------------------------

    def adopt(self, table: str, epoch: int) -> None:
        self.epochs[table] = epoch
        self.heads.pop(table, None)

    def disown(self, table: str) -> int | None:
        self.callbacks.pop(table, None)
        self.heads.pop(table, None)
        return self.epochs.pop(table, None)

    def epoch_arg(self, table: str) -> bytes:
        epoch = self.epochs.get(table)
        return b"" if epoch is None else b"%d" % epoch

    def drop(self, table: str) -> None:
        """Forget everything buffered for ``table`` (its writes would be refused)."""
        self.events.pop(table, None)
        self.versions.pop(table, None)
        self.firsts.pop(table, None)
        self.callbacks.pop(table, None)
        self.dirty.pop(table, None)
        self.urgent.discard(table)
        self.heads.pop(table, None)

    def fence(self, table: str) -> bool:
        """``table``'s write was refused: nothing of it is written any more. False when it
        was fenced out already."""
        if self.epochs.get(table) == FENCED_OUT:
            return False
        self.epochs[table] = FENCED_OUT
        self.drop(table)
        return True

    def released(self, table: str, *, done: bool) -> None:
        """``table``'s owner record was given back: finished (``done``, nothing more to
        write) or handed over (whatever is still buffered would be refused: dropped)."""
        self.versions.pop(table, None)
        self.callbacks.pop(table, None)
        self.heads.pop(table, None)
        if done:
            self.epochs.pop(table, None)
        else:
            self.epochs[table] = FENCED_OUT
            self.drop(table)

    def clear(self) -> None:
        """The store forgot everything: nothing buffered, no epoch."""
        for part in (self.events, self.versions, self.firsts, self.callbacks, self.dirty,
                     self.heads, self.epochs):
            part.clear()
        self.urgent.clear()

    def take(self, table: str) -> TableWrites:
        """Take ``table``'s buffered writes out (to go with its result)."""
        self.urgent.discard(table)
        return TableWrites(self.events.pop(table, None), self.versions.pop(table, None),
                           self.firsts.pop(table, None), self.dirty.pop(table, None))

    def put_back_table(self, table: str, writes: TableWrites) -> None:
        self.put_back({table: writes.events} if writes.events else {},
                      {table: writes.snapshot} if writes.snapshot is not None else {},
                      {table: writes.version} if writes.version is not None else {},
                      {table: writes.first} if writes.first is not None else {})

    # --- a flush ---------------------------------------------------------------------------

    def queue(self, batch: Batch, now: float, *, everything: bool) -> Taken:
        """Queue one fenced append per table on ``batch``: what it takes from the buffer.
        Snapshots not yet due stay buffered unless ``everything``."""
        keys = self.keys
        events, self.events = self.events, {}
        versions, self.versions = self.versions, {}
        firsts, self.firsts = self.firsts, {}
        taken: dict[str, SnapshotFn] = {}
        packed_snapshots: dict[str, bytes] = {}
        waiting: dict[str, SnapshotFn] = {}
        if self.dirty:
            snapshot_at = self.snapshot_at
            urgent, self.urgent = self.urgent, set()
            if everything or now >= self.due_at:
                due: list[tuple[str, SnapshotFn]] = []
                due_at = float("inf")
                for table, snapshot in self.dirty.items():
                    at = snapshot_at.get(table, -SNAPSHOT_INTERVAL) + SNAPSHOT_INTERVAL
                    if everything or table in urgent or now >= at:
                        due.append((table, snapshot))
                    else:
                        waiting[table] = snapshot
                        if at < due_at:
                            due_at = at
                self.dirty, self.due_at = waiting, due_at
            else:
                # Only the urgent tables can be due (see mark_dirty): the others wait.
                waiting = self.dirty
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
        ttl = b"%d" % self.log_ttl_ms
        cap = b"%d" % self.log_max
        sha = self.append_sha
        order: list[str] = []
        heads = self.heads
        for table in dict.fromkeys([*events, *packed_snapshots]):
            # The fixed part of a table's fenced append (script, keys, epoch, TTL, cap) is
            # built and RESP-encoded once per epoch, not on every flush.
            head = heads.get(table)
            if head is None:
                args = (b"EVALSHA", sha, b"3", keys.table_lease(table).encode(),
                        keys.table_events(table).encode(), keys.table_snapshot(table).encode(),
                        self.epoch_arg(table), ttl, cap)
                head = heads[table] = (args, b"".join(b"$%d\r\n%b\r\n" % (len(a), a)
                                                      for a in args))
            first = firsts.get(table)
            batch.add_headed(head[0], head[1], packed_snapshots.get(table, b""),
                             b"" if first is None else b"%d" % first, *events.get(table, ()))
            order.append(table)
        if now - self.pruned_at > SNAPSHOT_INTERVAL:
            self._prune(now)
        return Taken(order, events, taken, versions, firsts, bool(waiting))

    def put_back(self, events: dict[str, list[bytes]], snapshots: dict[str, SnapshotFn],
                 versions: dict[str, int] | None = None,
                 firsts: dict[str, int] | None = None) -> None:
        """A write failed (or its outcome is unknown): its events go back in front of what
        was buffered since, to be written again (the scripts skip the versions already
        stored), its snapshots back unless a newer one is waiting. A table fenced out
        meanwhile gets nothing back."""
        for table, items in events.items():
            if self.epochs.get(table) == FENCED_OUT:
                continue
            newer = self.events.get(table)
            self.events[table] = items if newer is None else items + newer
            first = (firsts or {}).get(table)
            if first is not None:
                self.firsts[table] = first
            else:
                self.firsts.pop(table, None)
        for table, version in (versions or {}).items():
            self.versions.setdefault(table, version)
        for table, snapshot in snapshots.items():
            self.dirty.setdefault(table, snapshot)
            self.snapshot_at.pop(table, None)
            self.urgent.add(table)

    def prepend(self, table: str, first: int, packed: list[bytes]) -> None:
        """Buffer ``packed`` (the events ``first``, ``first + 1``...) before what ``table``
        has buffered: the store lost them and they are written again."""
        self.events[table] = packed + self.events.get(table, [])
        self.firsts[table] = first

    def put_back_taken(self, taken: Taken) -> None:
        self.put_back(taken.events, taken.snapshots, taken.versions, taken.firsts)

    def _prune(self, now: float) -> None:
        """Forget the times of tables that have been quiet (their next write starts afresh)."""
        self.pruned_at = now
        self.snapshot_at = {
            t: at for t, at in self.snapshot_at.items() if now - at < SNAPSHOT_INTERVAL
        }

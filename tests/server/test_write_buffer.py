"""The write-behind state on its own (no Redis): what a flush takes, what a failed write puts
back, and what fencing, releasing and a lost store drop."""

from __future__ import annotations

from typing import Any

from server.store.batch import Batch
from server.store.keys import Keys
from server.store.write_buffer import FENCED_OUT, SNAPSHOT_INTERVAL, WriteBuffer


def buffer() -> WriteBuffer:
    return WriteBuffer(Keys("t42test:"), append_sha=b"0" * 40, log_ttl_ms=1000, log_max=100)


def snap() -> dict[str, Any]:
    return {"status": "playing"}


def test_the_first_event_of_a_table_asks_for_a_flush_and_later_ones_do_not() -> None:
    buf = buffer()
    told: list[int] = []
    assert buf.append("a", 1, b"e1", told.append)
    assert not buf.append("a", 2, b"e2", told.append)
    assert buf.append("b", 5, b"f5", None)
    assert buf.pending_events == 3
    assert buf.firsts == {"a": 1, "b": 5} and buf.versions == {"a": 2, "b": 5}
    assert buf.callbacks == {"a": told.append}


def test_a_flush_takes_every_table_once_and_a_failed_write_puts_it_back_in_front() -> None:
    buf = buffer()
    buf.adopt("a", 7)
    buf.append("a", 1, b"e1", None)
    buf.append("a", 2, b"e2", None)
    buf.mark_dirty("a", snap, urgent=True)
    batch = Batch()
    taken = buf.queue(batch, 100.0, everything=False)
    assert taken.order == ["a"] and batch.count == 1
    assert taken.events == {"a": [b"e1", b"e2"]} and "a" in taken.snapshots
    assert b"$1\r\n7\r\n" in b"".join(batch.parts)  # the epoch fences the write
    assert buf.events == {} and buf.dirty == {}
    buf.append("a", 3, b"e3", None)
    buf.put_back_taken(taken)
    assert buf.events["a"] == [b"e1", b"e2", b"e3"]
    assert buf.firsts["a"] == 1 and buf.versions["a"] == 3
    assert "a" in buf.urgent  # the snapshot goes with the next flush


def test_a_snapshot_not_due_waits_in_the_buffer() -> None:
    buf = buffer()
    buf.mark_dirty("a", snap, urgent=True)
    buf.queue(Batch(), 100.0, everything=False)
    buf.mark_dirty("a", snap, urgent=False)
    batch = Batch()
    taken = buf.queue(batch, 100.0 + SNAPSHOT_INTERVAL / 2, everything=False)
    assert batch.count == 0 and taken.waiting and "a" in buf.dirty
    taken = buf.queue(Batch(), 100.0 + SNAPSHOT_INTERVAL, everything=False)
    assert "a" in taken.snapshots and not taken.waiting


def test_a_fenced_table_drops_what_it_buffered_and_gets_nothing_back() -> None:
    buf = buffer()
    buf.adopt("a", 3)
    buf.append("a", 1, b"e1", None)
    taken = buf.queue(Batch(), 1.0, everything=False)
    buf.append("a", 2, b"e2", None)
    assert buf.fence("a") and not buf.fence("a")
    assert buf.epochs["a"] == FENCED_OUT and buf.events == {}
    buf.put_back_taken(taken)
    assert buf.events == {}


def test_a_release_drops_a_handed_over_table_and_forgets_a_finished_one() -> None:
    buf = buffer()
    for table in ("over", "done"):
        buf.adopt(table, 2)
        buf.append(table, 1, b"e", None)
    buf.released("over", done=False)
    buf.released("done", done=True)
    assert buf.epochs == {"over": FENCED_OUT}
    assert "over" not in buf.events and "done" in buf.events


def test_a_finished_game_takes_its_tables_writes_and_can_give_them_back() -> None:
    buf = buffer()
    buf.append("a", 4, b"e4", None)
    buf.mark_dirty("a", snap, urgent=True)
    writes = buf.take("a")
    assert writes.events == [b"e4"] and writes.version == 4 and writes.first == 4
    assert buf.events == {} and "a" not in buf.urgent
    buf.put_back_table("a", writes)
    assert buf.events == {"a": [b"e4"]} and "a" in buf.dirty


def test_a_lost_store_leaves_nothing_buffered() -> None:
    buf = buffer()
    buf.adopt("a", 1)
    buf.append("a", 1, b"e", None)
    buf.mark_dirty("a", snap, urgent=True)
    buf.clear()
    assert (buf.events, buf.epochs, buf.dirty, buf.urgent) == ({}, {}, {}, set())

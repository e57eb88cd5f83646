"""``RecentEvents``: a table's memory window and the pages of ``sync`` (lean form), fed
directly: which events a page holds, from memory or from the log, and its ``complete`` and
``next``. No sockets, no Redis (the log is a list)."""

from __future__ import annotations

from typing import Any

import msgpack

from server.lobby.recent import RecentEvents

LOG: list[dict[str, Any]] = [{"type": "moved", "v": v} for v in range(1, 101)]


def window(size: int, upto: int = 100) -> tuple[RecentEvents, list[tuple[int, int]]]:
    recent = RecentEvents(size)
    for event in LOG[:upto]:
        recent.append(event["v"], msgpack.packb(event))
    return recent, []


async def page(recent: RecentEvents, reads: list[tuple[int, int]], since: int,
               size: int = 30, version: int = 100) -> tuple[list[int], bool, int | None]:
    async def read_log(start: int, upto: int) -> list[dict[str, Any]]:
        reads.append((start, upto))
        return [e for e in LOG if start < e["v"] <= upto]

    got = await recent.page(since, version, size, lean=True, game_starts=[1],
                            read_log=read_log)
    return [e["v"] for e in got.events], got.complete, got.next


async def test_a_page_in_the_window_comes_from_memory() -> None:
    recent, reads = window(50)
    assert await page(recent, reads, 80) == (list(range(81, 101)), True, None)
    assert reads == [] and len(recent.window) == 50


async def test_a_page_before_the_window_is_one_range_of_the_log() -> None:
    recent, reads = window(50)
    assert await page(recent, reads, 10) == (list(range(11, 41)), False, 40)
    assert reads == [(10, 40)]


async def test_nothing_new_is_a_complete_empty_page() -> None:
    recent, reads = window(50)
    assert await page(recent, reads, 100) == ([], True, None)


async def test_a_since_beyond_the_version_is_not_complete() -> None:
    recent, reads = window(50)
    assert await page(recent, reads, 120) == ([], False, None)


async def test_a_cleared_window_reads_the_log() -> None:
    recent, reads = window(50)
    recent.clear(None)
    assert await page(recent, reads, 90) == (list(range(91, 101)), True, None)
    assert reads == [(90, 100)]


def test_the_game_log_is_there_only_while_the_window_holds_its_start() -> None:
    recent, _ = window(50)
    assert recent.game_log([1], 100) is None
    logged = recent.game_log([1, 60], 100)
    assert logged is not None and [msgpack.unpackb(b)["v"] for b in logged] == list(range(60, 101))

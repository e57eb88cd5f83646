"""The asyncio shell of the node's tick: a duty that raises stays scheduled, a slow one never
overlaps itself nor holds up another, a poke runs a duty at once. Events, no sleeps."""

from __future__ import annotations

import asyncio
import logging

import pytest

from server.tick import Tick


async def test_a_duty_that_raises_is_logged_and_runs_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tick = Tick()
    runs: list[int] = []
    again = asyncio.Event()

    async def flaky() -> None:
        runs.append(len(runs))
        if len(runs) == 1:
            raise RuntimeError("boom")
        again.set()

    with caplog.at_level(logging.ERROR):
        tick.add("flaky", 0.01, flaky, first=0)
        await asyncio.wait_for(again.wait(), 10)
        await tick.remove("flaky")
    assert len(runs) >= 2
    assert any("flaky failed" in r.getMessage() for r in caplog.records)


async def test_a_slow_duty_never_overlaps_itself_nor_holds_up_another() -> None:
    tick = Tick()
    release = asyncio.Event()
    slow_runs = 0
    fast_runs = 0
    three = asyncio.Event()

    async def slow() -> None:
        nonlocal slow_runs
        slow_runs += 1
        await release.wait()

    async def fast() -> None:
        nonlocal fast_runs
        fast_runs += 1
        if fast_runs == 3:
            three.set()

    tick.add("slow", 0.001, slow, first=0)
    tick.add("fast", 0.001, fast, first=0)
    await asyncio.wait_for(three.wait(), 10)  # the fast one ran on while the slow one hung
    assert slow_runs == 1 and tick.running("slow")
    release.set()
    await tick.remove("slow", "fast")
    assert not tick.running("slow")


async def test_a_poke_runs_a_duty_at_once() -> None:
    tick = Tick()
    ran = asyncio.Event()

    async def scan() -> None:
        ran.set()

    tick.add("scan", 3600.0, scan)  # not due for an hour
    tick.poke("scan")
    await asyncio.wait_for(ran.wait(), 10)
    await tick.remove("scan")


async def test_a_halted_tick_runs_nothing_until_duties_are_added_again() -> None:
    tick = Tick()
    hung = asyncio.Event()
    ran = asyncio.Event()

    async def hang() -> None:
        hung.set()
        await asyncio.Event().wait()

    async def beat() -> None:
        ran.set()

    tick.add("hang", 3600.0, hang, first=0)
    await asyncio.wait_for(hung.wait(), 10)
    tick.halt()
    assert not tick.running("hang")
    tick.add("hang", 3600.0, beat, first=0)  # the name is free again
    await asyncio.wait_for(ran.wait(), 10)
    await tick.remove("hang")

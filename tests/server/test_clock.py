"""The lobby's clocks (server/lobby/clock.py): the virtual one tests move by hand, and the
event loop's."""

from __future__ import annotations

import asyncio

import pytest

from server.lobby.clock import LoopClock, VirtualClock


def test_the_virtual_clock_fires_due_timers_in_order_each_at_its_time() -> None:
    clock = VirtualClock(start=1000.0)
    fired: list[tuple[str, float, float]] = []

    def note(name: str) -> None:
        fired.append((name, clock.monotonic(), clock.now()))

    clock.call_later(5.0, note, "b")
    clock.call_later(2.0, note, "a")
    clock.call_at(5.0, note, "c")  # the same time as "b": after it, the order armed
    assert clock.advance(1.0) == 0 and fired == []
    assert clock.advance(4.0) == 3
    assert fired == [("a", 2.0, 1002.0), ("b", 5.0, 1005.0), ("c", 5.0, 1005.0)]
    assert (clock.monotonic(), clock.now()) == (5.0, 1005.0)


def test_a_cancelled_timer_never_fires_and_a_fired_one_cancels_quietly() -> None:
    clock = VirtualClock()
    fired: list[str] = []
    gone = clock.call_later(1.0, fired.append, "gone")
    kept = clock.call_later(1.0, fired.append, "kept")
    gone.cancel()
    assert clock.pending == 1 and clock.next_due() == 1.0
    clock.advance(10.0)
    kept.cancel()
    assert fired == ["kept"] and clock.pending == 0 and clock.next_due() is None


def test_timers_armed_by_a_timer_fire_within_the_same_advance() -> None:
    clock = VirtualClock()
    fired: list[float] = []

    def again() -> None:
        fired.append(clock.monotonic())
        if len(fired) < 3:
            clock.call_later(1.0, again)

    clock.call_later(0.0, again)
    assert clock.advance(0.0) == 1  # what is due now fires at advance(0)
    clock.advance(5.0)
    assert fired == [0.0, 1.0, 2.0]


def test_the_virtual_clock_does_not_go_back() -> None:
    with pytest.raises(ValueError):
        VirtualClock().advance(-1.0)


async def test_a_virtual_sleep_ends_when_the_clock_passes_it() -> None:
    clock = VirtualClock()
    sleeper = asyncio.ensure_future(clock.sleep(3.0))
    await asyncio.sleep(0)
    clock.advance(2.0)
    await asyncio.sleep(0)
    assert not sleeper.done()
    clock.advance(1.0)
    await asyncio.wait_for(sleeper, 5.0)


async def test_the_loop_clock_reads_the_loop_and_arms_its_timers_there() -> None:
    clock = LoopClock()
    loop = asyncio.get_running_loop()
    assert clock.monotonic() <= loop.time()
    done: asyncio.Future[str] = loop.create_future()
    clock.call_later(0.0, done.set_result, "soon")
    assert await asyncio.wait_for(done, 5.0) == "soon"
    at: asyncio.Future[str] = loop.create_future()
    clock.call_at(clock.monotonic(), at.set_result, "at")
    assert await asyncio.wait_for(at, 5.0) == "at"
    handle = clock.call_later(3600.0, at.set_result, "never")
    handle.cancel()
    await clock.sleep(0)

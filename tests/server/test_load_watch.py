"""The load meter's asyncio shell (server/net/load_watch.py) on a real event loop: its timer
measures how late it runs, a reading given from elsewhere replaces its own, and the metrics
follow the meter. Waits are polls with generous bounds; no duration is asserted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from server.metrics import Metrics
from server.net.load import LoadLimits, LoadMeter
from server.net.load_watch import LoadWatch

QUICK = LoadLimits(max_lag=0.05, max_cpu=0.0, busy_after=0.0, calm_after=0.0)


async def _until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


async def test_a_blocked_loop_reads_as_lag_and_turns_the_node_busy() -> None:
    meter, metrics = LoadMeter(QUICK), Metrics()
    watch = LoadWatch(meter, 0.02, metrics)
    watch.start()
    try:
        await asyncio.sleep(0.1)
        for _ in range(5):  # the loop held 0.2 s at a time: each sample runs that late
            time.sleep(0.2)
            await asyncio.sleep(0)
        await _until(meter.busy)
        assert metrics.busy.value == 1 and metrics.loop_lag.value > 0.05
        await _until(lambda: not meter.busy())  # free again: calm (no hold in QUICK)
        assert metrics.busy.value == 0
    finally:
        watch.stop()


async def test_a_reading_from_elsewhere_drives_the_meter() -> None:
    reading = [0.0]
    meter = LoadMeter(QUICK)
    watch = LoadWatch(meter, 0.01, Metrics(enabled=False), lag_reading=lambda: reading[0])
    watch.start()
    try:
        await asyncio.sleep(0.05)
        assert not meter.busy()
        reading[0] = 0.5
        await _until(meter.busy)
        reading[0] = 0.0
        await _until(lambda: not meter.busy())
    finally:
        watch.stop()


async def test_the_test_stall_file_makes_lag_only_while_it_exists(tmp_path: Path) -> None:
    stall = tmp_path / "stall"
    meter = LoadMeter(QUICK)
    watch = LoadWatch(meter, 0.05, Metrics(enabled=False), burn_file=str(stall))
    watch.start()
    try:
        await asyncio.sleep(0.2)
        stall.write_text("0.15")
        await _until(meter.busy)
        stall.unlink()
        await _until(lambda: not meter.busy())
    finally:
        watch.stop()

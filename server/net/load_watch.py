"""The asyncio shell of :class:`server.net.load.LoadMeter`: one timer that samples the node.

Every ``load_sample_interval`` seconds a ``call_later`` timer fires; how late it fired is the
event loop's lag (a loop busy running other callbacks runs the timer late). The process's
CPU time (``time.process_time``) is read with it. Both go to the meter, and the readings to
the metrics (``table42_loop_lag_seconds``, ``table42_cpu_share``, ``table42_busy``). A change
of the busy state is logged (a warning when the node turns busy, with its readings).

No work per move, per table or per socket: one timer callback per period. The inputs are
callables: ``lag_reading`` (when given) replaces the timer's own overshoot, so a reading
taken off the loop (a heartbeat thread's) can drive the same meter.

``burn_file`` is a test aid (setting ``load_test_burn_file``, empty in production): while
that file exists and holds a number of seconds, the loop is stalled that long just before
each sample is due (so the sample runs late by about that much), and a test can make a real
node busy and calm again without loading the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from server.metrics import Metrics
from server.net.load import LoadMeter

log = logging.getLogger(__name__)

MAX_BURN = 5.0
"""Seconds: the most one test stall may last."""
BURN_LEAD = 0.01
"""Seconds: a test stall starts this long before the sample is due."""


class LoadWatch:
    """Samples the loop's lag and the process's CPU into ``meter`` every ``period`` seconds."""

    def __init__(self, meter: LoadMeter, period: float, metrics: Metrics, *,
                 cpu_seconds: Callable[[], float] = time.process_time,
                 lag_reading: Callable[[], float] | None = None,
                 burn_file: str = "") -> None:
        self.meter = meter
        self.period = period
        self.metrics = metrics
        self._cpu_seconds = cpu_seconds
        self._lag_reading = lag_reading
        self._burn = Path(burn_file) if burn_file else None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._busy_since = 0.0

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.meter.observe(loop.time(), 0.0, self._cpu_seconds())
        self._arm(loop)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        self._due = loop.time() + self.period
        self._handle = loop.call_at(self._due, self._sample, loop)
        if self._burn is not None:
            loop.call_at(self._due - min(BURN_LEAD, self.period / 2), self._stall)

    def _sample(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        lag = now - self._due if self._lag_reading is None else self._lag_reading()
        meter = self.meter
        changed = meter.observe(now, lag, self._cpu_seconds())
        metrics = self.metrics
        metrics.loop_lag.set(meter.lag())
        metrics.cpu_share.set(meter.cpu())
        if changed is not None:
            metrics.busy.set(1 if changed else 0)
            self._log_change(changed, now)
        self._arm(loop)

    def _log_change(self, busy: bool, now: float) -> None:
        meter = self.meter
        if busy:
            self._busy_since = now
            log.warning("node busy (loop lag %.0f ms, CPU %.0f%% of a core): new tables, queue "
                        "entries, computer games and heavy reads are refused until it is calm",
                        meter.lag() * 1000, meter.cpu() * 100)
        else:
            log.warning("node calm again after %.1f s busy (loop lag %.0f ms, CPU %.0f%%)",
                        now - self._busy_since, meter.lag() * 1000, meter.cpu() * 100)

    def _stall(self) -> None:
        """The test aid: stall the loop for the seconds the burn file holds, if it exists."""
        if self._burn is None or self._handle is None:  # (stopped meanwhile)
            return
        seconds = 0.0
        with contextlib.suppress(OSError, ValueError):
            seconds = float(self._burn.read_text().strip() or 0)
        if seconds > 0:
            time.sleep(min(seconds, MAX_BURN))

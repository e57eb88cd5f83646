"""How loaded this node is, and whether it is *busy*: the meter behind refusing new work at
the door (docs/operations.md, "Overload").

Pure: :class:`LoadMeter` is fed samples (:meth:`LoadMeter.observe`: the time, the event
loop's lag, the process's CPU seconds) and keeps two smoothed readings:

- **lag**: how late the loop ran a timer that was due, smoothed (an exponential average with
  a :data:`LAG_TAU` time constant); one sample counts at most :data:`LAG_CAP` seconds, so a
  single stall (a paused process, a long collection) fades in about a second instead of
  reading as lasting load;
- **cpu**: the process's CPU time over wall time between two samples (1.0 is one core
  fully used), smoothed with :data:`CPU_TAU`.

The node turns **busy** when either reading has stayed over its limit (``max_lag``,
``max_cpu``; 0 turns that reading's limit off) for ``busy_after`` seconds, and turns calm
again when both have stayed under :data:`CALM_SHARE` of their limits for ``calm_after``
seconds: the gap between the two levels and the two holds keep it from flapping. It is
**strained** while a reading is over its limit now, or while it is busy: optional costly
work (the finished-game reads) is refused from the first moment, before ``busy_after``.
:meth:`LoadMeter.retry_after` is the honest wait for a refused client: the calm hold still to
run while busy, at least one second.

The asyncio shell that samples the loop on a timer is :mod:`server.net.load_watch`; its
inputs are callables, so a reading taken elsewhere (a heartbeat thread's view of the loop)
can feed the same meter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LAG_TAU = 0.5
"""Seconds: the time constant of the smoothed lag."""
CPU_TAU = 1.0
"""Seconds: the time constant of the smoothed CPU share."""
LAG_CAP = 1.0
"""Seconds: the most one lag sample counts for (a stall is one event, not lasting load)."""
CALM_SHARE = 0.7
"""A busy node is calm again once both readings are under this share of their limits."""


@dataclass(frozen=True, slots=True)
class LoadLimits:
    """The thresholds (settings ``load_max_lag``, ``load_max_cpu``, ``load_busy_after``,
    ``load_calm_after``). A limit of 0 is off; both off: the node is never busy."""

    max_lag: float = 0.1
    max_cpu: float = 0.9
    busy_after: float = 3.0
    calm_after: float = 5.0

    @property
    def enabled(self) -> bool:
        return self.max_lag > 0 or self.max_cpu > 0


class LoadMeter:
    """The node's load readings and its busy state (see the module docstring)."""

    def __init__(self, limits: LoadLimits) -> None:
        self.limits = limits
        self._lag = 0.0
        self._cpu = 0.0
        self._busy = False
        self._last: float | None = None  # the time of the last sample
        self._last_cpu: float | None = None  # the process's CPU seconds then
        self._over_since: float | None = None  # over a limit since (not busy yet)
        self._calm_since: float | None = None  # under the calm levels since (busy)
        self._now = 0.0

    def observe(self, now: float, lag: float, cpu_seconds: float | None = None) -> bool | None:
        """One sample at ``now`` (seconds, any monotonic clock): the loop's lag then (seconds)
        and the process's CPU time so far (``time.process_time()``; None: no CPU reading).
        Returns the new busy state when it changed, else None."""
        lag = min(max(lag, 0.0), LAG_CAP)
        last = self._last
        if last is None:
            self._lag = lag
        else:
            dt = max(now - last, 0.0)
            self._lag += (lag - self._lag) * (1.0 - math.exp(-dt / LAG_TAU))
            if cpu_seconds is not None and self._last_cpu is not None and dt > 0:
                share = max(cpu_seconds - self._last_cpu, 0.0) / dt
                self._cpu += (share - self._cpu) * (1.0 - math.exp(-dt / CPU_TAU))
        self._last = now
        self._now = now
        if cpu_seconds is not None:
            self._last_cpu = cpu_seconds
        return self._judge(now)

    def _judge(self, now: float) -> bool | None:
        limits = self.limits
        if not limits.enabled:
            return None
        if not self._busy:
            over = (0 < limits.max_lag < self._lag) or (0 < limits.max_cpu < self._cpu)
            if not over:
                self._over_since = None
                return None
            if self._over_since is None:
                self._over_since = now
            if now - self._over_since < limits.busy_after:
                return None
            self._busy, self._over_since, self._calm_since = True, None, None
            return True
        calm = ((limits.max_lag <= 0 or self._lag < limits.max_lag * CALM_SHARE)
                and (limits.max_cpu <= 0 or self._cpu < limits.max_cpu * CALM_SHARE))
        if not calm:
            self._calm_since = None
            return None
        if self._calm_since is None:
            self._calm_since = now
        if now - self._calm_since < limits.calm_after:
            return None
        self._busy, self._calm_since = False, None
        return False

    def lag(self) -> float:
        """The smoothed loop lag, seconds."""
        return self._lag

    def cpu(self) -> float:
        """The smoothed CPU share of the process (1.0: one core fully used)."""
        return self._cpu

    def busy(self) -> bool:
        """Whether the node refuses new work now."""
        return self._busy

    def strained(self) -> bool:
        """Whether a reading is over its limit now, or the node is busy (the finished-game
        reads are refused meanwhile)."""
        return self._busy or self._over_since is not None

    def retry_after(self) -> float:
        """Seconds a refused client should wait: what is left of the calm hold (all of it
        while the node is still over its calm levels), at least 1."""
        if not self._busy:
            return 1.0  # strained only: the next sample may well be under the limit
        hold = self.limits.calm_after
        if self._calm_since is not None:
            hold -= self._now - self._calm_since
        return max(1.0, hold)

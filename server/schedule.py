"""When each periodic duty of a node is due: the pure core of the node's one tick.

A node has a few duties done every so many seconds (its heartbeat, the takeover scan, the
Redis check, the matchmaking passes, the tournament tick...). :class:`Schedule` keeps their
due times in one heap; the asyncio shell (``server/tick.py``) sleeps until the earliest one,
takes what is due and runs it. No asyncio, no clock of its own: every call is given ``now``.

* A duty is due on a grid: ``origin + k * period``. Duties whose periods divide one another
  fall due at the same instants, so the node wakes once for all of them. A run that ends
  past its next due time does not run again at once: the next due time is the first point
  of the grid after its end (missed points are skipped, never caught up).
* A duty being run is not due again until :meth:`Schedule.finished` says it ended: a slow
  run never overlaps the next one.
* :meth:`Schedule.poke` makes a duty due at once (or right after the run in progress).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

__all__ = ["SLACK", "Duty", "Schedule"]

SLACK = 0.002
"""Seconds: a duty due this soon after ``now`` is taken with those due (one wake-up)."""


@dataclass(slots=True)
class Duty:
    """One periodic duty: its period, next due time, and whether a run is in progress."""

    name: str
    period: float
    origin: float
    due: float
    running: bool = False
    poked: bool = False  # poked while running: due again as soon as the run ends


class Schedule:
    """The due times of named duties (see the module docstring)."""

    def __init__(self) -> None:
        self._duties: dict[str, Duty] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = 0  # heap tiebreak; a heap entry is stale unless it matches its duty's due

    def add(self, name: str, period: float, *, now: float, first: float | None = None,
            origin: float | None = None) -> None:
        """Do ``name`` every ``period`` seconds on the grid from ``origin`` (default ``now``);
        first due at ``now + first`` (default: one period on, ``first=0``: at once)."""
        if name in self._duties:
            raise ValueError(f"duty {name!r} is scheduled already")
        if not (math.isfinite(period) and period > 0):
            raise ValueError(f"period of {name!r}: must be > 0 seconds, got {period!r}")
        start = now if origin is None else origin
        due = now + period if first is None else now + first
        duty = Duty(name, period, start, due)
        self._duties[name] = duty
        self._push(duty)

    def remove(self, name: str) -> None:
        """Forget ``name`` (its heap entries go stale; a run in progress is the caller's)."""
        self._duties.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._duties

    def __len__(self) -> int:
        return len(self._duties)

    def next_due(self) -> float | None:
        """The earliest due time of a duty not being run; None when nothing is waiting."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def take_due(self, now: float) -> list[str]:
        """The duties due at ``now`` (or within :data:`SLACK` of it), marked as being run,
        earliest first."""
        taken: list[str] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now + SLACK:
                return taken
            _, _, name = heapq.heappop(self._heap)
            duty = self._duties[name]
            duty.running = True
            taken.append(name)

    def finished(self, name: str, now: float) -> None:
        """A run of ``name`` ended at ``now``: due at the first point of its grid after
        ``now`` (at once if it was poked meanwhile)."""
        duty = self._duties.get(name)
        if duty is None or not duty.running:
            return
        duty.running = False
        if duty.poked:
            duty.poked = False
            duty.due = now
        else:  # (a run taken up to SLACK early may end before its own due time)
            duty.due = self._after(duty, max(now, duty.due))
        self._push(duty)

    def poke(self, name: str, now: float) -> None:
        """Make ``name`` due at once (right after its run in progress, if one is)."""
        duty = self._duties.get(name)
        if duty is None:
            return
        if duty.running:
            duty.poked = True
        elif duty.due > now:
            duty.due = now
            self._push(duty)

    def running(self, name: str) -> bool:
        duty = self._duties.get(name)
        return duty is not None and duty.running

    @staticmethod
    def _after(duty: Duty, now: float) -> float:
        steps = math.floor((now - duty.origin) / duty.period) + 1
        return duty.origin + max(steps, 1) * duty.period

    def _push(self, duty: Duty) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (duty.due, self._seq, duty.name))

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            due, _, name = heap[0]
            duty = self._duties.get(name)
            if duty is not None and not duty.running and duty.due == due:
                return
            heapq.heappop(heap)
